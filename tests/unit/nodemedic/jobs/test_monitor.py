"""A restarted run's start cut-off: it counts from the moment the job's new pods all run, not
from the restart, so the Job controller's backoff before it makes them is never a hang."""

from __future__ import annotations

from nodemedic.jobs.evaluate import RuleState
from nodemedic.jobs.latency import PodSeen, running_again
from nodemedic.jobs.monitor import current, judge_lines, judge_time, running_from
from nodemedic.jobs.rules import parse_rules

RULES = parse_rules(
    '[{name: start, logPattern: ".*training_loss_step.*", expectedStartCutOffInSeconds: 6}]'
)
RESTART = 1000.0
BACKOFF = 40.0
"""The Job controller's failure backoff after a few restarts: far past the cut-off."""


def _hanging(states: dict[str, RuleState]) -> bool:
    return states["start"].verdict == "hanging"


def test_the_backoff_before_the_new_pods_run_is_no_hang() -> None:
    states = current(RULES, {}, RESTART, running_from(RESTART, None, RESTART + BACKOFF))
    assert not _hanging(judge_time(RULES, states, RESTART + BACKOFF))


def test_the_cut_off_counts_from_the_pods_running_again() -> None:
    pending = current(RULES, {}, RESTART, running_from(RESTART, None, RESTART + 5))
    ran = RESTART + BACKOFF
    states = current(RULES, pending, RESTART, running_from(RESTART, ran, ran + 5))
    assert not _hanging(judge_time(RULES, states, ran + 5))
    judged = judge_time(RULES, states, ran + 7)
    assert _hanging(judged)
    assert judged["start"].verdict_at == ran + 7


def test_a_first_line_after_the_pods_run_keeps_the_run_alive() -> None:
    ran = RESTART + BACKOFF
    states = current(RULES, {}, RESTART, running_from(RESTART, ran, ran + 1))
    states = judge_lines(RULES, states, [(ran + 4, "step 1 training_loss_step 2.1")])
    assert not _hanging(judge_time(RULES, states, ran + 9))


def test_a_state_keeps_its_cut_off_once_the_watch_is_over() -> None:
    ran = RESTART + BACKOFF
    states = current(RULES, {}, RESTART, running_from(RESTART, ran, ran + 1))
    later = current(RULES, states, RESTART)
    assert later["start"].cut_off_start == ran
    assert RuleState.from_item(later["start"].as_item()) == later["start"]


def test_a_first_run_and_a_stored_state_of_before_count_from_the_start() -> None:
    states = current(RULES, {}, RESTART)
    assert _hanging(judge_time(RULES, states, RESTART + 7))
    old = RuleState.from_item({"started_at": RESTART})
    assert old.cut_off_start == RESTART


def test_the_pods_run_again_when_the_last_new_one_is_ready() -> None:
    new = [PodSeen("b", "Running", 1030.0), PodSeen("c", "Running", 1041.0)]
    assert running_again({"a"}, new) == 1041.0
    assert running_again({"a"}, [PodSeen("a", "Running", 990.0), *new]) is None
    assert running_again({"a"}, [*new, PodSeen("d", "Pending", None)]) is None
    assert running_again({"a"}, []) is None
