"""Rules in HyperPod's schema: what HyperPod's docs show parses, a mistake names itself."""

from __future__ import annotations

import json
import time

import pytest

from nodemedic.jobs.evaluate import RuleState, observe
from nodemedic.jobs.rules import RuleError, parse_rules

HYPERPOD_EXAMPLE = r"""
- name: "JobStart"
  logPattern: ".*Experiment configuration.*"
  expectedStartCutOffInSeconds: 120
- name: "JobHangingDetection"
  logPattern: ".*\\[Epoch 0 Batch \\d+.*'training_loss_step': (\\d+(\\.\\d+)?).*"
  expectedRecurringFrequencyInSeconds: 300
  expectedStartCutOffInSeconds: 600
- name: "LowThroughputDetection"
  logPattern: ".*\\[Epoch 0 Batch \\d+.*'samples\\/sec': (\\d+(\\.\\d+)?).*"
  metricThreshold: 80
  operator: "lteq"
  metricEvaluationDataPoints: 25
- name: "GPU Error"
  logPattern: ".*RuntimeError.*out of memory.*"
  faultOnMatch: true
"""


def test_hyperpods_documented_example_parses_with_its_defaults() -> None:
    start, hanging, throughput, gpu = parse_rules(HYPERPOD_EXAMPLE)
    assert (start.name, start.start_cutoff, start.recurring_frequency) == ("JobStart", 120, None)
    assert (hanging.start_cutoff, hanging.recurring_frequency) == (600, 300)
    assert (throughput.metric_threshold, throughput.operator) == (80, "lteq")
    assert throughput.data_points == 25
    assert start.data_points == 1, "metricEvaluationDataPoints defaults to 1"
    assert gpu.fault_on_match and not start.fault_on_match


def test_json_and_a_pasted_run_policy_are_read_too() -> None:
    rules = [{"name": "r", "logPattern": "step", "expectedRecurringFrequencyInSeconds": 10}]
    assert parse_rules(json.dumps(rules))[0].recurring_frequency == 10
    pasted = json.dumps({"jobMaxRetryCount": 3, "logMonitoringConfiguration": rules})
    assert parse_rules(pasted)[0].name == "r"


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ("[]", "non-empty list"),
        ("name: x", "non-empty list"),
        ("[{logPattern: x}]", "rule 1: name"),
        ("[{name: a}]", "rule 'a': logPattern"),
        ("[{name: a, logPattern: '(unclosed'}]", "is not a regular expression"),
        ("[{name: a, logPattern: x, expectedStartCutoffInSeconds: 5}]", "unknown field"),
        ("[{name: a, logPattern: x, expectedStartCutOffInSeconds: 0}]", "greater than 0"),
        ("[{name: a, logPattern: x, expectedRecurringFrequencyInSeconds: ten}]", "a number"),
        ("[{name: a, logPattern: '(\\d+)', metricThreshold: 2, operator: gte}]", "operator"),
        ("[{name: a, logPattern: '(\\d+)', metricThreshold: 2}]", "go together"),
        ("[{name: a, logPattern: 'loss', metricThreshold: 2, operator: gt}]", "capture group"),
        ("[{name: a, logPattern: x, metricEvaluationDataPoints: 0}]", "integer >= 1"),
        ("[{name: a, logPattern: x, faultOnMatch: 'yes'}]", "true or false"),
        ("[{name: a, logPattern: x}, {name: a, logPattern: y}]", "unique"),
        ("{unclosed", "neither YAML nor JSON"),
    ],
)
def test_an_invalid_rule_is_an_error_that_says_what_is_wrong(rules: str, says: str) -> None:
    with pytest.raises(RuleError, match=says):
        parse_rules(rules)


def test_a_backtracking_pattern_runs_in_linear_time() -> None:
    """``re`` took 9.4 s to fail this pattern on this line; RE2 takes microseconds."""
    [rule] = parse_rules(r'[{name: words, logPattern: "(\\w+\\s?)+$", faultOnMatch: true}]')
    line = "a" * 40 + "!"
    began = time.process_time()
    state = observe(rule, RuleState(started_at=0.0), line, 1.0)
    assert time.process_time() - began < 0.1, "CPU seconds on one line"
    assert state.verdict is None


@pytest.mark.parametrize("pattern", [r"(step) \\1", r"loss(?=\\d)"])
def test_a_pattern_re2_cannot_run_in_linear_time_is_an_invalid_rule(pattern: str) -> None:
    with pytest.raises(RuleError, match="linear time"):
        parse_rules(f'[{{name: a, logPattern: "{pattern}"}}]')
