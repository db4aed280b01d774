"""The classify Lambda against moto in this process: the payloads it is sent, the
executions it started."""

from __future__ import annotations

import json
from typing import Any

from tests.support.lambda_context import lambda_context

REGION = "us-east-1"
TABLE = "nodemedic-idempotency"
LEDGER = "nodemedic-ledger"
CONTEXT = lambda_context("classify", memory_mb=256, timeout_seconds=30)

World = dict[str, Any]
"""The moto world of one test: the handler, the clients, the names."""


def executions(aws: World) -> list[dict[str, Any]]:
    sfn = aws["sfn"]
    listed = sfn.list_executions(stateMachineArn=aws["machine"])["executions"]
    return [
        json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"]) for e in listed
    ]
