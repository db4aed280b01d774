"""``nodemedic reboot|replace`` and ``history``: argument errors before any AWS call, the
history's JSON schema."""

from __future__ import annotations

import json

import pytest

from console.cli import main
from console.cli.remediations import entry, lines

RECORD = {
    "pk": "i-0123456789abcdef0",
    "sk": "decision#i-0123456789abcdef0-abc-manual-reboot",
    "decision_id": "i-0123456789abcdef0-abc-manual-reboot",
    "cluster": "prod",
    "instance_id": "i-0123456789abcdef0",
    "node": "ip-10-0-0-1.ec2.internal",
    "node_group": "p5",
    "fault_id": "manual-reboot",
    "action": "reboot",
    "source": "manual",
    "evidence_line": "reboot requested by alice: slow",
    "first_seen": "2026-11-22T18:30:00Z",
    "started_at": "2026-11-22T18:30:01Z",
    "state": "closed",
    "outcome": "rebooted",
    "reason": "reboot (policy: Automatic)",
    "requested_by": "alice",
    "request_reason": "slow",
    "at_marking": "2026-11-22T18:30:03Z",
    "at_rebooting": "2026-11-22T18:30:05Z",
    "at_closed": "2026-11-22T18:31:00Z",
    "actions": json.dumps({"rebooted": {"at": "2026-11-22T18:30:50Z"},
                           "marked": {"at": "2026-11-22T18:30:03Z"}}),
    "seconds": 59.0,
    "purge_at": 1_787_000_000.0,
}  # fmt: skip
SCHEMA_KEYS = {
    "schema", "decision_id", "cluster", "instance_id", "node", "node_group", "fault_id",
    "action", "source", "evidence_line", "first_seen", "started_at", "state", "outcome",
    "reason", "failed_step", "error", "ended_at", "requested_by", "request_reason",
    "execution", "triggered_by", "steps", "node_changes", "seconds", "approved_by",
    "denied_by", "approval_reason", "handed_off_to", "ticket", "taken_back_by", "substrate",
}  # fmt: skip
"""docs/contracts.md, "nodemedic history": keys only grow."""


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["replace", "ip-10-0-0-1", "--cluster", "prod"], "--reason"),
        (["reboot", "--reason", "x", "--cluster", "prod"], "node"),
        (["reboot", "ip-10-0-0-1", "--reason", "x"], "--cluster"),
        (["history", "--cluster", "prod", "--format", "yaml"], "invalid choice"),
    ],
)
def test_missing_or_bad_arguments_are_refused_before_any_call(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code == 2
    assert says in capsys.readouterr().err


def test_a_negative_wait_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["reboot", "ip-10-0-0-1", "--reason", "x", "--cluster", "p", "--wait", "-1"])

    assert code == 2
    assert "--wait must not be negative" in capsys.readouterr().err


def test_history_entry_has_the_documented_schema_and_orders_steps_by_time() -> None:
    shown = entry(RECORD)

    assert set(shown) == SCHEMA_KEYS
    assert json.loads(json.dumps(shown)) == shown
    assert [s["step"] for s in shown["steps"]] == ["open", "marking", "rebooting", "closed"]
    assert [c["change"] for c in shown["node_changes"]] == ["marked", "rebooted"]
    assert (shown["triggered_by"], shown["outcome"], shown["seconds"]) == (
        "alice",
        "rebooted",
        59.0,
    )


def test_an_automatic_remediation_is_triggered_by_its_node_line() -> None:
    shown = entry({**RECORD, "source": "kmsg", "requested_by": None})

    assert shown["triggered_by"] == "kmsg line of i-0123456789abcdef0"


def test_history_names_the_substrate_that_repaired_the_node() -> None:
    hyperpod = entry({**RECORD, "outcome": "replaced", "substrate": "hyperpod"})
    assert hyperpod["substrate"] == "hyperpod"
    assert lines(hyperpod)[0].endswith("-> replaced (hyperpod)")
    autoscaling = entry({**RECORD, "outcome": "replaced", "substrate": "autoscaling"})
    assert lines(autoscaling)[0].endswith("-> replaced")
