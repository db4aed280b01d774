"""A GSP that keeps refusing RPCs is rebooted, one refusal is not: the rule's threshold, as
the Lambda's batch logic, the backtest and triage each count it."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.backtest.read import History, read_lines
from console.backtest.replay import replay
from console.backtest.report import rows
from console.cli import main
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line
from tests.support.triage import verdicts

ENFORCING = ClusterSettings(name="bt", node_groups=("gpu",))
RULE = default_classifier().catalog.rule("nvidia-gsp-rpc-failed")
LINE = fault_line("nvidia-gsp-rpc-failed")


def test_the_rule_reboots_at_its_third_failure_within_ten_minutes() -> None:
    assert RULE.action == "reboot"
    assert RULE.threshold is not None and (RULE.threshold.count, RULE.threshold.window) == (3, 600)


def replayed(lines: list[str]) -> list[str]:
    found = History()
    read_lines(found, lines, "gpu-node-1", boot=0.0, year=2026)
    return [row.action for row in rows(replay(found, default_classifier(), ENFORCING))]


def at(minute: int, message: str) -> str:
    return f"Nov 22 18:{minute:02d}:00 gpu-node-1 kernel: {message}"


def test_the_backtest_reboots_on_the_third_and_not_before() -> None:
    assert replayed([at(1, LINE), at(2, LINE)]) == ["below-threshold"]
    assert replayed([at(1, LINE), at(2, LINE), at(3, LINE)]) == ["reboot"]


def test_failures_further_apart_than_the_window_do_not_add_up() -> None:
    assert replayed([at(1, LINE), at(15, LINE), at(30, LINE)]) == ["below-threshold"]


def test_a_folded_run_of_failures_reaches_the_threshold() -> None:
    assert replayed([at(1, LINE), at(1, f"message repeated 2 times: [ {LINE}]")]) == ["reboot"]


@pytest.mark.parametrize(
    ("lines", "action", "waiting"),
    [
        ([LINE], "none", ["nvidia-gsp-rpc-failed"]),
        ([LINE, LINE, LINE], "reboot", []),
        ([f"kernel: message repeated 3 times: [ {LINE}]"], "reboot", []),
    ],
)
def test_triage_waits_for_the_third_failure(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    lines: list[str],
    action: str,
    waiting: list[str],
) -> None:
    log = tmp_path / "kern.log"
    log.write_text("".join(f"{line}\n" for line in lines))
    assert main(["triage", "--format", "json", str(log)]) == 0
    [verdict] = verdicts(capsys.readouterr().out)
    assert (verdict["action"], verdict["waiting"]) == (action, waiting)
