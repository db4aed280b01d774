"""The classify Lambda's world: moto in this process, with the idempotency table and a
state machine to start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodemedic.contracts.env import ENV_LEDGER_TABLE, ENV_PROOF_OF_ORIGIN, ENV_STALE_AFTER
from nodemedic.remediate.silence import Recent
from tests.support.classify import LEDGER, REGION, TABLE
from tests.support.tables import create_ledger_table

RECORDED_AGE = 100 * 365 * 86400
"""A ``stale_after`` no recorded payload is older than."""


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "NodeMedic")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "classify")
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        sfn = boto3.client("stepfunctions")
        machine = sfn.create_state_machine(
            name="remediate",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/sfn",
        )["stateMachineArn"]
        monkeypatch.setenv("STATE_MACHINE_ARN", machine)
        monkeypatch.setenv("IDEMPOTENCY_TABLE", TABLE)
        # These lines are unsigned: proof of origin is tested where it is enforced.
        monkeypatch.setenv(ENV_PROOF_OF_ORIGIN, "audit")
        # The recorded payloads were logged in 2025: their age is tested where it matters
        # (test_stale.py).
        monkeypatch.setenv(ENV_STALE_AFTER, str(RECORDED_AGE))
        from lambdas.classify import handler as module

        module._dependencies.cache_clear()
        module._registrations.cache_clear()
        # A fresh container's memory of the heartbeats it wrote: another test's node must
        # not make this test's heartbeat look recently written.
        monkeypatch.setattr(module, "_RECENT", Recent())
        yield {"sfn": sfn, "machine": machine, "handler": module.handler, "module": module}
        module._dependencies.cache_clear()


@pytest.fixture
def ledger(aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """The ledger table, where the classifier records the agents' heartbeats."""
    create_ledger_table(LEDGER)
    monkeypatch.setenv(ENV_LEDGER_TABLE, LEDGER)
    return LEDGER
