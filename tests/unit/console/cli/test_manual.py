"""``nodemedic reboot|replace``: who asked is the identity AWS authenticated the caller as,
never the free text of ``--requested-by``, which stays in the reason."""

from __future__ import annotations

import argparse
import json
from typing import Any

from console.cli.manual import request

CALLER = "arn:aws:sts::123456789012:assumed-role/ops/alice"
INSTANCE = "i-0123456789abcdef0"


class FakeAws:
    """The four clients ``request`` calls, answering as AWS would for one running node."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []

    def client(self, name: str, endpoint_url: str | None = None) -> Any:
        return self

    def describe_instances(self, **_: Any) -> dict[str, Any]:
        instance = {"InstanceId": INSTANCE, "State": {"Name": "running"}}
        return {"Reservations": [{"Instances": [instance]}]}

    def get_caller_identity(self) -> dict[str, str]:
        return {"Arn": CALLER}

    def start_execution(self, **given: Any) -> dict[str, str]:
        self.started.append(json.loads(given["input"]))
        return {"executionArn": "arn:aws:states:us-east-1:123456789012:execution:m:x"}

    def describe_execution(self, **_: Any) -> dict[str, str]:
        return {"status": "RUNNING"}

    def get_item(self, **_: Any) -> dict[str, Any]:
        return {}


def _asked(requested_by: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    aws = FakeAws()
    args = argparse.Namespace(
        command="reboot",
        node=INSTANCE,
        reason="hung NCCL",
        requested_by=requested_by,
        cluster="prod-trn",
        endpoint_url=None,
        wait=0,
    )
    shown = request(args, aws, machine="arn:machine", table="ledger")
    (decision,) = aws.started
    return shown, decision


def test_who_asked_is_the_callers_sts_identity_and_the_free_text_only_a_reason() -> None:
    shown, decision = _asked("bob@example.com")

    assert decision["requested_by"] == shown["requested_by"] == CALLER
    assert decision["request_reason"] == "hung NCCL (on behalf of bob@example.com)"
    assert decision["evidence_line"].startswith(f"reboot requested by {CALLER}: ")


def test_without_requested_by_the_reason_is_the_reason() -> None:
    shown, decision = _asked(None)

    assert decision["requested_by"] == CALLER
    assert decision["request_reason"] == shown["reason"] == "hung NCCL"
