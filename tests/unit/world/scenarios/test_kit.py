"""The demo's ``nodemedic history`` read back from stdout, where the Lambda handlers running
in the same process print their log and metric lines at the same time."""

from __future__ import annotations

import json

from world.scenarios.kit import printed_remediations

HISTORY = json.dumps({"cluster": "demo", "remediations": [{"outcome": "rebooted"}]}, sort_keys=True)
LOG = '{"level":"INFO","message":"batch classified","instance_id":"i-0123456789abcdef0"}\n'
METRIC = '{"_aws":{"Timestamp":1},"Cluster":"demo","LinesClassified":[1.0]}'


def test_the_history_is_found_among_the_handlers_lines() -> None:
    assert printed_remediations(LOG + HISTORY + "\n" + LOG) == [{"outcome": "rebooted"}]


def test_the_history_is_found_right_after_a_metric_line_s_text_before_its_newline() -> None:
    assert printed_remediations(METRIC + HISTORY + "\n\n" + LOG) == [{"outcome": "rebooted"}]


def test_no_history_printed_is_no_remediation() -> None:
    assert printed_remediations(LOG + METRIC + "\n") == []
