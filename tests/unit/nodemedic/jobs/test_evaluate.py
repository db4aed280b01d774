"""A rule's verdicts, as HyperPod documents them, over lines and the time between them."""

from __future__ import annotations

from functools import reduce

import pytest

from nodemedic.jobs.evaluate import RuleState, expire, observe
from nodemedic.jobs.rules import Rule, parse_rules

LOSS_SPIKE = parse_rules(
    r"""
- name: LossSpikeDetection
  logPattern: ".*training_loss_step (\\S+).*"
  metricThreshold: 2.0
  operator: gt
  metricEvaluationDataPoints: 5
"""
)[0]
HANG = parse_rules(
    r"""
- name: JobHangingDetection
  logPattern: ".*Train Epoch.*"
  expectedStartCutOffInSeconds: 60
  expectedRecurringFrequencyInSeconds: 10
  stopPattern: ".*Training complete.*"
"""
)[0]
OOM = parse_rules(
    '[{name: GPU Error, logPattern: ".*RuntimeError.*out of memory.*", faultOnMatch: true}]'
)[0]
START = RuleState(started_at=1000.0)


def run(rule: Rule, lines: list[tuple[float, str]], state: RuleState = START) -> RuleState:
    return reduce(lambda s, line: observe(rule, s, line[1], line[0]), lines, state)


def losses(*values: str) -> list[tuple[float, str]]:
    return [(1001.0 + i, f"step {i} training_loss_step {v} lr 1e-4") for i, v in enumerate(values)]


def test_loss_above_the_threshold_for_five_data_points_is_slow() -> None:
    state = run(LOSS_SPIKE, losses("2.5", "3.0", "2.1", "9.9", "4.2"))
    assert state.verdict == "slow"
    assert "training_loss_step 4.2" in state.evidence


def test_four_data_points_above_it_are_not() -> None:
    assert run(LOSS_SPIKE, losses("2.5", "3.0", "2.1", "9.9")).verdict is None


def test_a_data_point_within_the_threshold_starts_the_count_again() -> None:
    state = run(LOSS_SPIKE, losses("2.5", "3.0", "2.1", "9.9", "1.5", "2.5", "3.0", "2.1", "9.9"))
    assert state.verdict is None
    assert state.slow_count == 4


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-"])
def test_a_value_that_is_no_decimal_counts_as_beyond_the_threshold(value: str) -> None:
    assert run(LOSS_SPIKE, losses("0.5", value, value, value, value, value)).verdict == "slow"


def test_every_operator_compares_the_value_with_the_threshold() -> None:
    for operator, breaching, healthy in [
        ("gt", "3", "2"),
        ("gteq", "2", "1"),
        ("lt", "1", "2"),
        ("lteq", "2", "3"),
        ("eq", "2", "2.5"),
    ]:
        (rule,) = parse_rules(
            f"[{{name: r, logPattern: 'v=(\\S+)', metricThreshold: 2, operator: {operator}}}]"
        )
        assert run(rule, [(1001, f"v={breaching}")]).verdict == "slow", operator
        assert run(rule, [(1001, f"v={healthy}")]).verdict is None, operator


def test_no_first_match_within_the_start_cut_off_is_hanging() -> None:
    assert expire(HANG, START, 1060.0).verdict is None
    hung = expire(HANG, START, 1060.5)
    assert (hung.verdict, hung.verdict_at) == ("hanging", 1060.5)


def test_a_first_match_in_time_then_a_gap_longer_than_the_frequency_is_hanging() -> None:
    state = run(HANG, [(1050, "Train Epoch: 1 [0/600]"), (1059, "Train Epoch: 1 [64/600]")])
    assert expire(HANG, state, 1069).verdict is None
    assert expire(HANG, state, 1069.5).verdict == "hanging"


def test_a_gap_is_measured_between_lines_even_when_they_arrive_together() -> None:
    """A delivery can carry a hang and its end at once: the timestamps still show it."""
    state = run(HANG, [(1050, "Train Epoch: 1"), (1075, "Train Epoch: 2")])
    assert (state.verdict, state.evidence) == ("hanging", "Train Epoch: 2")


def test_lines_that_do_not_match_do_not_keep_a_rule_alive() -> None:
    state = run(HANG, [(1050, "Train Epoch: 1"), (1055, "data loader waiting"), (1061, "still")])
    assert state.verdict == "hanging"


def test_the_stop_pattern_silences_the_rule() -> None:
    state = run(HANG, [(1050, "Train Epoch: 9"), (1052, "Training complete")])
    assert not state.active
    assert expire(HANG, state, 99_999).verdict is None
    assert observe(HANG, state, "Train Epoch: 1", 99_999).verdict is None


def test_a_fault_on_match_line_is_faulted_at_once() -> None:
    assert run(OOM, [(1001, "step 3")]).verdict is None
    state = run(OOM, [(1001, "step 3"), (1002, "RuntimeError: CUDA out of memory.")])
    assert (state.verdict, state.verdict_at) == ("faulted", 1002)


def test_a_verdict_stands_until_the_run_restarts() -> None:
    hung = expire(HANG, START, 2000)
    assert observe(HANG, hung, "Train Epoch: 5", 2001) == hung


def test_the_state_survives_the_ledger() -> None:
    state = run(LOSS_SPIKE, losses("2.5", "3.0"))
    assert RuleState.from_item(state.as_item()) == state
    hung = expire(HANG, START, 2000)
    assert RuleState.from_item(hung.as_item()) == hung
