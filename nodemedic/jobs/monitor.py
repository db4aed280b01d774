"""A job's rules together: states for the current run, lines and time applied to all, and the
verdict that acts (HyperPod's order: faulted before hanging before slow)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from operator import itemgetter

from nodemedic.jobs.evaluate import VERDICTS, RuleState, expire, observe_lines
from nodemedic.jobs.rules import Rule

States = dict[str, RuleState]
PRIORITY = ("faulted", "hanging", "slow")


def current(
    rules: Sequence[Rule],
    stored: Mapping[str, RuleState],
    epoch: float,
    cut_off_from: float | None = None,
) -> States:
    """Each rule's state in the run that started at ``epoch``: a state of an earlier run
    (before a restart) starts over. ``cut_off_from``, where given, is when the run's start
    cut-off counts from (``running_from``); otherwise a state keeps what it had."""
    states = {
        rule.name: (
            stored[rule.name]
            if rule.name in stored and stored[rule.name].started_at == epoch
            else RuleState(started_at=epoch)
        )
        for rule in rules
    }
    if cut_off_from is None:
        return states
    return {name: replace(state, cut_off_from=cut_off_from) for name, state in states.items()}


def running_from(restarted_at: float, running_at: float | None, now: float) -> float:
    """When a restarted run's start cut-off counts from: the moment its new pods all ran
    (``running_at``), or ``now`` while they do not run yet, so that the Job controller's
    backoff before it makes them (10 s, doubling, up to six minutes) is never a hang."""
    return max(restarted_at, now if running_at is None else running_at)


def judge_lines(
    rules: Sequence[Rule], states: States, lines: Iterable[tuple[float, str]]
) -> States:
    """The states after ``lines`` (log time, text), taken in log time order; a line logged
    before the run started belongs to the run before and is not this run's evidence."""
    ordered = sorted(lines, key=itemgetter(0))
    times = [at for at, _ in ordered]
    judged = dict(states)
    for rule in rules:
        state = judged[rule.name]
        since = bisect_left(times, state.started_at)
        judged[rule.name] = observe_lines(rule, state, ordered[since:])
    return judged


def judge_time(rules: Sequence[Rule], states: States, now: float) -> States:
    return {rule.name: expire(rule, states[rule.name], now) for rule in rules}


def verdict_of(states: Mapping[str, RuleState]) -> tuple[str, RuleState] | None:
    """The rule whose verdict acts, if any rule has one."""
    judged = [(name, s) for name, s in states.items() if s.verdict is not None]
    if not judged:
        return None
    assert set(PRIORITY) == set(VERDICTS)
    return min(judged, key=lambda item: (PRIORITY.index(str(item[1].verdict)), item[0]))
