"""10,000 seeded payloads (``tests.support.fuzz``) through the kube Lambda's handler, from
one valid event of each op: every one the contract refuses is a ``BadRequest`` naming the
field, raised before the cluster is touched; no other exception escapes. The cluster and
AWS are stand-ins that raise ``Touched`` at the first call: a payload that gets there had
every field its op reads checked (each op reads them all before its first call), so what
happens past that call is the ops' own tests' (tests/integration/lambdas/kube)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from lambdas.kube import handler as kube
from lambdas.kube.resume import JOB_FIELDS
from nodemedic.contracts.substrates import DELETE_NODECLAIM_OP, NODECLAIM_GONE_OP, NODECLAIM_OF_OP
from tests.support.fuzz import Untouchable, kinds, outcomes, payloads
from tests.support.lambda_context import lambda_context

CASES = 10_000
SEED = 20261129
NODE, INSTANCE, AT = "ip-10-0-0-1.ec2.internal", "i-0123456789abcdef0", "2026-11-22T18:30:00Z"
MARKING = {
    "node": NODE,
    "fault_id": "nvidia-xid-79",
    "condition": "AcceleratedHardwareReady",
    "condition_status": "False",
    "reason": "NvidiaXid79",
    "message": "NVRM: Xid (PCI:0000:2b:00): 79",
    "health_status": "UnschedulablePendingReplacement",
}
EVENTS: list[dict[str, Any]] = [
    {"op": "locate", "instance_id": INSTANCE},
    {"op": "mark", **MARKING, "cordon": True, "taint": True},
    {"op": "hold", **MARKING, "why": "a fleet event"},
    {
        "op": "drain",
        "node": NODE,
        "started_at": AT,
        "timeout_seconds": 600,
        "settle_seconds": 30,
        "force": False,
        "devices": ["0000:2b:00.0"],
    },
    {"op": "node_status", "node": NODE, "boot_id": "b-1"},
    {"op": "clear", "node": NODE, "fault_id": "nvidia-xid-79", "condition": "Ready"},
    {"op": "lift", "node": NODE},
    {"op": "delete_node", "node": NODE},
    {"op": "fail", "node": NODE, "fault_id": "f", "step": "draining", "error": "E", "message": ""},
    {"op": "tainted"},
    {"op": "silent"},
    {"op": "requested", "cluster": "demo"},
    {"op": "jobs_on_node", "node": NODE, "devices": None},
    {
        "op": "resume_jobs",
        "jobs": [dict.fromkeys(JOB_FIELDS, "x")],
        "node": NODE,
        "decision_id": "d-1",
    },
    {
        "op": "deep_check",
        "instance_id": INSTANCE,
        "verdict": "Passed",
        "at": AT,
        "release_hold": True,
        "key_boot_id": "b-2",
    },
    {
        "op": "hold_for_deep_check",
        "node": NODE,
        "fault_id": "nvidia-xid-48",
        "condition": "AcceleratedHardwareReady",
        "decision_id": "d-1",
        "rebooted_at": AT,
        "boot_id": "b-1",
    },
    {"op": "overdue_deep_checks", "timeout_seconds": 3600},
    {"op": "census", "cluster": "demo"},
    {"op": "pick_spare", "nodegroup": "ng-1"},
    {"op": "admit_spare", "node": NODE},
    {"op": "hold_spare", "nodegroup": "ng-1", "since": AT},
    {"op": "group_size", "nodegroup": "ng-1"},
    {"op": NODECLAIM_OF_OP, "node": NODE},
    {"op": DELETE_NODECLAIM_OP, "node": NODE, "nodeclaim": "default-x7k2p"},
    {"op": NODECLAIM_GONE_OP, "node": NODE, "nodeclaim": "default-x7k2p"},
]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = SimpleNamespace(access=None, cluster="demo", ledger=lambda op: "ledger")
    monkeypatch.setattr(kube, "env", lambda: settings)
    monkeypatch.setattr(kube, "api_client", lambda access: None)
    monkeypatch.setattr(kube, "client", SimpleNamespace(CoreV1Api=lambda api: Untouchable()))
    monkeypatch.setattr(boto3, "client", lambda *_, **__: Untouchable())


def test_every_op_has_a_seed() -> None:
    assert sorted(e["op"] for e in EVENTS) == sorted(kube.OPS)


@pytest.mark.slow
@pytest.mark.usefixtures("offline")
def test_a_bad_payload_is_refused_only_with_a_bad_request_before_the_cluster() -> None:
    context = lambda_context("kube", memory_mb=256, timeout_seconds=60)
    ended, escaped = outcomes(
        lambda payload: kube.handler(payload, context),
        payloads(random.Random(SEED), EVENTS, CASES),
        kube.BadRequest,
    )
    assert escaped == [], kinds(escaped)
    assert ended["refused"] > 2_000 and ended["reached"] > 2_000, ended
