"""Subscription payloads wrapped the way CloudWatch Logs wraps them."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from nodemedic.contracts.jobs import application_log_group
from tests.support.paths import EVENTS as EVENTS_ROOT
from world.aws.quotas import subscription_event

EVENTS = EVENTS_ROOT / "subscription"


def decoded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return data


def wrap(data: dict[str, Any]) -> dict[str, Any]:
    return subscription_event(data)


RECORD: dict[str, Any] = json.loads(
    (EVENTS_ROOT / "containerinsights" / "application-record.json").read_text()
)
"""A Container Insights application log record (Fluent Bit's), as the job monitor reads."""


def delivery(
    namespace: str, job: str, pod: str, lines: list[str], group: str = application_log_group("demo")
) -> dict[str, Any]:
    """A subscription delivery of ``lines`` from ``pod``, one second apart, logged now."""
    start = int(time.time() * 1000)
    events = []
    for i, line in enumerate(lines):
        record = copy.deepcopy(RECORD)
        record["log"] = line + "\n"
        record["kubernetes"].update(namespace_name=namespace, pod_name=pod)
        record["kubernetes"]["labels"] = {"job-name": job, "controller-uid": "x"}
        events.append(
            {"id": str(start + i), "timestamp": start + i * 1000, "message": json.dumps(record)}
        )
    return wrap(
        {
            "messageType": "DATA_MESSAGE",
            "owner": "123456789012",
            "logGroup": group,
            "logStream": f"{pod}_{namespace}_trainer-0123456789abcdef.log",
            "subscriptionFilters": ["nodemedic-jobs"],
            "logEvents": events,
        }
    )
