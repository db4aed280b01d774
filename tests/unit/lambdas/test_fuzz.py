"""10,000 seeded payloads through each Lambda entry point that takes events from outside
its own state machine's code (``tests.support.fuzz``): nothing escapes but the error the
entry point declares for a payload it refuses, and the planned Lambda, which EventBridge
invokes with whatever a rule matched, fails no invocation at all. (The classify handler's
own: ``tests/unit/lambdas/classify/test_fuzz.py``; the kube Lambda's and the job monitor's:
``tests/unit/lambdas/kube/test_fuzz.py``, ``tests/unit/lambdas/jobs/test_fuzz.py``.)
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from lambdas.planned import handler as planned
from lambdas.policy.handler import handler as policy_handler
from nodemedic.contracts.env import ENV_LEDGER_TABLE, ENV_PLANNED, ENV_STATE_MACHINE_ARN
from nodemedic.remediate.breaker import Limits
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.fleet import FleetRules
from nodemedic.remediate.planned import NoticeError, notice_of
from nodemedic.remediate.policy import Policy
from tests.support.fuzz import outcomes, payloads
from tests.support.paths import EVENTS

CASES = 10_000
SEED = 20261129
GROUP = "ng-1"
SENT = "2026-11-22T18:30:00Z"


def notices(instance_id: str) -> list[Any]:
    """AWS's documented notices (``tests/events/aws-notices``), dated, about ``instance_id``."""
    found = []
    for path in sorted((EVENTS / "aws-notices").glob("*.json")):
        text = path.read_text(encoding="utf-8").replace("yyyy-mm-ddThh:mm:ssZ", SENT)
        found.append(json.loads(re.sub(r"i-[0-9a-f]{17}", instance_id, text)))
    return found


class _Answer:
    """An HTTP body of ``{}``, as botocore reads one."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield b"{}"


def offline_client(sent: list[str]) -> Callable[[str], Any]:
    """boto3 clients that validate and serialize every call as for AWS, then answer 200
    with an empty body instead of sending it; each operation is noted in ``sent``."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.headers.get("X-Amz-Target", b"").decode())
        return AWSResponse(request.url, 200, {}, _Answer())

    @functools.cache  # made once: a client costs more than the call it makes
    def client(service: str) -> Any:
        made = session.client(service)
        made.meta.events.register("before-send", answer)
        return made

    return client


@pytest.fixture
def planned_world(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The planned Lambda's settings, one instance in a managed group (so readable notices
    plan and start executions), and its AWS calls answered offline; the calls sent."""
    instance = "i-0123456789abcdef0"
    sent: list[str] = []
    monkeypatch.setenv(
        ENV_STATE_MACHINE_ARN, "arn:aws:states:us-east-1:123456789012:stateMachine:p"
    )
    monkeypatch.setenv(ENV_LEDGER_TABLE, "ledger")
    settings = {"cluster": "c", "node_groups": [GROUP], "spot_groups": [GROUP], "lead_time": 60}
    monkeypatch.setenv(ENV_PLANNED, json.dumps(settings))
    monkeypatch.setattr(planned, "reserved", lambda ec2, reservation: (instance,))
    monkeypatch.setattr(
        planned, "groups_of", lambda autoscaling, found: dict.fromkeys(found, GROUP)
    )
    monkeypatch.setattr(boto3, "client", offline_client(sent))
    return sent


@pytest.mark.slow
def test_the_notice_parser_raises_only_notice_errors() -> None:
    ended, escaped = outcomes(
        notice_of,
        payloads(random.Random(SEED), notices("i-0123456789abcdef0"), CASES),
        NoticeError,
    )
    assert escaped == [], escaped[:20]
    assert ended["refused"] > 1_000


@pytest.mark.slow
def test_no_event_fails_the_planned_lambdas_invocation(
    planned_world: list[str],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bad event is counted (``UnreadableNotices``) and logged; readable ones still plan."""
    seeds = notices("i-0123456789abcdef0")
    planned_ids: list[str] = []

    def invoke(event: Any) -> None:
        planned_ids.extend(planned.handler(event, None)["planned"])

    _, escaped = outcomes(invoke, payloads(random.Random(SEED), seeds, CASES))
    assert escaped == [], escaped[:20]
    unreadable = capsys.readouterr().out.count('"UnreadableNotices":[1.0]')
    assert unreadable > 500
    told = [r for r in caplog.records if r.getMessage() == "unreadable notice"]
    assert len(told) == unreadable
    assert len(planned_ids) > 100
    assert planned_world.count("AWSStepFunctions.StartExecution") == len(planned_ids)


def policy_events() -> list[dict[str, Any]]:
    """One event of each op, as the remediation state machine sends it."""
    limits = Limits(10, 6, 24, 3, 12, 1800)
    empty: dict[str, Any] = {"Item": {}}
    group = {"name": GROUP, "size": 10, "found": True}
    return [
        {
            "op": "plan",
            "decision": {"action": "reboot", "health_status": "UnschedulablePendingReboot"},
            "group": group,
            "last_reboot": {"at": "2026-11-22T18:20:00.000+00:00"},
            "now": SENT,
            "policy": Policy(node_groups=(GROUP,)).to_mapping(),
            "instance_types": ["p5.48xlarge"],
        },
        {"op": "elapsed", "since": SENT, "until": "2026-11-22T18:31:01.5+00:00"},
        {"op": "clock", "at": SENT},
        {"op": "admission", "at": SENT, "action": "reboot", "limits": vars(limits)},
        {
            "op": "judge",
            "breaker": empty,
            "hour": {"Item": {"started": {"SS": ["d-1"]}}},
            "day": empty,
            "instance": "i-0123456789abcdef0",
            "decision": "d-2",
            "action": "replace",
            "group": GROUP,
            "now": 1_795_938_035,
            "limits": vars(limits),
        },
        {
            "op": "fleet",
            "window": {
                "found": True,
                "first_at": "1795938000",
                "nodes": ["i-b"],
                "verdict": "open",
            },
            "instance_id": "i-a",
            "fault_id": "neuron-dma-error",
            "group": group,
            "now": SENT,
            "rules": FleetRules(min_nodes=3, min_percent=50, window=600, settle=60).to_mapping(),
        },
    ]


@pytest.mark.slow
def test_the_policy_lambda_refuses_a_bad_payload_only_with_a_policy_error() -> None:
    """The state machine records where and why a task failed: a ``PolicyError`` names the
    field; any other error would say nothing of the payload."""
    ended, escaped = outcomes(
        lambda event: policy_handler(event, None),
        payloads(random.Random(SEED), policy_events(), CASES),
        PolicyError,
    )
    assert escaped == [], escaped[:20]
    assert ended["refused"] > 1_000
