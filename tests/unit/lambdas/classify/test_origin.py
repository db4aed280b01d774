"""Proof of origin in the classify Lambda: a reboot or replace acts only on lines signed
with the key the instance registered; anything else is notified, with the reason."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import boto3
import pytest

from agent.origin import sealed_registration, signer
from nodemedic.contracts.env import ENV_IDENTITY_CERTIFICATES, ENV_PROOF_OF_ORIGIN
from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.contracts.logs import (
    identity_stream,
    node_log_group,
    origin_key_alias,
    registration_message,
)
from nodemedic.contracts.metrics import (
    FORGED_REASON,
    REASON_DIMENSION,
    UNPROVEN_METRIC,
    UNVERIFIABLE_REASON,
)
from nodemedic.origin.signing import KEY_BYTES, Registration
from nodemedic.remediate.decision import UNPROVEN_NOTE
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import wrap
from world.aws.identity import identity_document, local_authority
from world.aws.origins import kms_encrypt

CLUSTER, VICTIM, ATTACKER = "trn-prod", "i-0a1b2c3d4e5f60718", "i-0ffffffffffffff01"
STRANGER = "i-0eeeeeeeeeeeeee02"
JUNK = base64.b64encode(b"\x01" * 200).decode("ascii")
"""An identity stream event that no KMS key sealed: anyone with the agents' credential can
write one."""
XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
AUTHORITY = local_authority()
KEYS = {VICTIM: b"v" * KEY_BYTES, ATTACKER: b"a" * KEY_BYTES}
AT = 1763836201000


@pytest.fixture
def enforced(aws: World, monkeypatch: pytest.MonkeyPatch) -> World:
    """The cluster's origin key, and both nodes' agents registered as they do at start."""
    monkeypatch.setenv(ENV_PROOF_OF_ORIGIN, "enforce")
    monkeypatch.setenv(ENV_IDENTITY_CERTIFICATES, AUTHORITY.certificate_pem)
    kms, logs = boto3.client("kms"), boto3.client("logs")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName=origin_key_alias(CLUSTER), TargetKeyId=key)
    logs.create_log_group(logGroupName=node_log_group(CLUSTER))
    for instance, secret in KEYS.items():
        document = identity_document(instance, "us-east-1")
        registration = Registration(instance, "boot-1", secret, document, AUTHORITY.sign(document))
        sealed = sealed_registration(kms_encrypt(kms), CLUSTER, registration)
        put(logs, identity_stream(instance), sealed)
    return aws


def put(logs: Any, stream: str, message: str, create: bool = True) -> None:
    if create:
        logs.create_log_stream(logGroupName=node_log_group(CLUSTER), logStreamName=stream)
    logs.put_log_events(
        logGroupName=node_log_group(CLUSTER),
        logStreamName=stream,
        logEvents=[{"timestamp": int(time.time() * 1000), "message": message}],
    )


def deliver(
    aws: World, message: str, stream_of: str = VICTIM, source: str = "kmsg"
) -> dict[str, Any]:
    payload = {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": node_log_group(CLUSTER),
        "logStream": f"{stream_of}/{source}",
        "subscriptionFilters": ["nodemedic"],
        "logEvents": [{"id": "1", "timestamp": AT, "message": message}],
    }
    result: dict[str, Any] = aws["handler"](wrap(payload), CONTEXT)
    return result


def test_a_line_signed_by_the_victims_agent_replaces_it(enforced: World) -> None:
    result = deliver(enforced, signer(KEYS[VICTIM], VICTIM)(AT, XID79))
    [decision] = executions(enforced)
    assert decision["evidence_line"] == XID79
    assert decision["action"] == "replace"
    assert "key_boot_id" not in decision  # a deep check's pass's only
    assert result["unproven"] == [] and result["capped"] == []


def test_a_proven_deep_check_pass_names_the_boot_whose_key_proved_it(enforced: World) -> None:
    """The post-reboot gate compares it with the node's boot: a pass the previous boot's
    key signed must not admit the rebooted node."""
    verdict = {"check": DEEP_CHECK_VERDICT, "device": "node", "status": "ok", "reason": "Passed"}
    line = json.dumps(verdict | {"figures": {}, "ts": "2025-11-22T18:31:00Z"})

    deliver(enforced, signer(KEYS[VICTIM], VICTIM)(AT, line), source="deep-check")

    [decision] = executions(enforced)
    assert decision["fault_id"] == "deep-check-passed"
    assert decision["key_boot_id"] == "boot-1"


def test_a_forged_unsigned_line_is_only_notified_with_the_reason(enforced: World) -> None:
    result = deliver(enforced, XID79)
    [decision] = executions(enforced)
    assert (decision["action"], decision["health_status"]) == ("notify", "Schedulable")
    note = UNPROVEN_NOTE.format(reason="unsigned", action="replace")
    assert decision["evidence_line"] == note + XID79
    assert result["capped"] == [decision["decision_id"]] and result["unproven"] == ["1"]


def test_a_line_the_attacker_signs_with_its_own_nodes_key_is_only_notified(
    enforced: World,
) -> None:
    """The attacker's node is registered, and it writes into the victim's stream with the
    shared credential, signing for the victim with its own key."""
    for as_instance in (ATTACKER, VICTIM):
        deliver(enforced, signer(KEYS[ATTACKER], as_instance)(AT, XID79))
    decisions = executions(enforced)
    assert {d["action"] for d in decisions} == {"notify"}
    assert "is not registered by " + VICTIM in decisions[0]["evidence_line"]


def test_a_tampered_signed_line_is_only_notified(enforced: World) -> None:
    signed = signer(KEYS[VICTIM], VICTIM)(AT, XID79.replace(": 79,", ": 48,"))
    deliver(enforced, signed.replace(": 48,", ": 79,"))
    [decision] = executions(enforced)
    assert (
        decision["action"] == "notify" and "signature does not match" in decision["evidence_line"]
    )


def test_audit_lets_unsigned_lines_act_and_counts_them(
    enforced: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROOF_OF_ORIGIN, "audit")
    result = deliver(enforced, XID79)
    [decision] = executions(enforced)
    assert decision["action"] == "replace" and result["unproven"] == ["1"]


def test_registrations_are_never_classified(enforced: World) -> None:
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": node_log_group(CLUSTER),
        "logStream": identity_stream(VICTIM),
        "logEvents": [{"id": "1", "timestamp": AT, "message": XID79}],
    }
    assert enforced["handler"](wrap(payload), CONTEXT) == {"lines": 0}


def unproven_published(printed: str) -> dict[str, list[float]]:
    """The UnprovenEvidence counts the handler published, by class of reason."""
    found = [json.loads(line) for line in printed.splitlines()]
    return {p[REASON_DIMENSION]: p[UNPROVEN_METRIC] for p in found if REASON_DIMENSION in p}


def test_a_registration_kms_refuses_costs_the_instances_other_registrations_nothing(
    enforced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """KMS refuses a blob it did not seal (moto as AccessDenied, AWS as InvalidCiphertext,
    or AccessDenied for a key of another account): that registration is refused, the
    genuine one still proves the victim's line, and nothing is published as unproven."""
    put(boto3.client("logs"), identity_stream(VICTIM), JUNK, create=False)
    result = deliver(enforced, signer(KEYS[VICTIM], VICTIM)(AT, XID79))
    [decision] = executions(enforced)
    assert decision["action"] == "replace" and result["unproven"] == []
    assert unproven_published(capsys.readouterr().out) == {}


def test_a_node_none_of_whose_registrations_holds_is_notified_with_the_reason_and_pages(
    enforced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    put(boto3.client("logs"), identity_stream(STRANGER), JUNK)
    result = deliver(enforced, signer(b"s" * KEY_BYTES, STRANGER)(AT, XID79), stream_of=STRANGER)
    [decision] = executions(enforced)
    assert decision["action"] == "notify" and result["unproven"] == ["1"]
    assert f"does not decrypt as {STRANGER}'s: AccessDeniedException" in decision["evidence_line"]
    assert unproven_published(capsys.readouterr().out) == {UNVERIFIABLE_REASON: [1.0]}


def test_a_line_signed_with_a_key_its_node_did_not_register_is_counted_as_forged(
    enforced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    deliver(enforced, signer(KEYS[ATTACKER], VICTIM)(AT, XID79))
    assert unproven_published(capsys.readouterr().out) == {FORGED_REASON: [1.0]}


def test_a_boots_registration_line_proves_its_lines_in_every_container_without_its_stream(
    enforced: World, ledger: str
) -> None:
    """The agent ships its registration first in its kmsg stream: the classifier keeps it
    in the ledger, so the boot's later lines prove in a container that starts cold, though
    the identity stream never held that registration and thousands of events were written
    into it since."""
    kms, logs = boto3.client("kms"), boto3.client("logs")
    key, document = b"n" * KEY_BYTES, identity_document(VICTIM, "us-east-1")
    registration = Registration(VICTIM, "boot-2", key, document, AUTHORITY.sign(document))
    sealed = sealed_registration(kms_encrypt(kms), CLUSTER, registration)
    sign = signer(key, VICTIM)
    payload = {
        "messageType": "DATA_MESSAGE",
        "logGroup": node_log_group(CLUSTER),
        "logStream": f"{VICTIM}/kmsg",
        "logEvents": [
            {"id": "1", "timestamp": AT, "message": registration_message(sealed)},
            {"id": "2", "timestamp": AT + 1, "message": sign(AT + 1, XID79)},
        ],
    }
    result = enforced["handler"](wrap(payload), CONTEXT)
    assert result["lines"] == 1 and result["unproven"] == []
    now = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=node_log_group(CLUSTER),
        logStreamName=identity_stream(VICTIM),
        logEvents=[{"timestamp": now, "message": JUNK} for _ in range(10_000)],
    )
    enforced["module"]._registrations.cache_clear()

    verdict = {"check": DEEP_CHECK_VERDICT, "device": "node", "status": "ok", "reason": "Passed"}
    line = json.dumps(verdict | {"figures": {}, "ts": "2025-11-22T18:31:00Z"})
    deliver(enforced, sign(AT, line), source="deep-check")

    passed = [d for d in executions(enforced) if d["fault_id"] == "deep-check-passed"]
    assert [d["key_boot_id"] for d in passed] == ["boot-2"]
