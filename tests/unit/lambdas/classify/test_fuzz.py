"""10,000 generated payloads through the classify handler: every one is either classified
or refused as ``MalformedPayload`` (which Lambda retries, then sends to the function's
dead-letter queue); no other exception escapes, so nothing is lost without a trace. (The
only other one the handler may raise, ``Retryable``, is for AWS throttling or failing,
which moto never does.)

Payloads are made from the real subscription payloads in ``tests/events/subscription``,
each changed in one way: the ways that keep it a valid payload (any message text, JSON
nested or cut or huge in any stream kind, lines signed with any key, any stream of the
node, SageMaker HyperPod's events of any of its streams) must be classified (a HyperPod
group's may be refused and counted instead), one bad line never costing the others; the
ways that break it must be refused. Signed lines reach identity streams holding junk next to real
registrations, so KMS refuses some. The generator is seeded: a failure names the case and
reproduces.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import random
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from agent.origin import sealed_registration
from nodemedic.contracts.env import ENV_CLUSTER, ENV_IDENTITY_CERTIFICATES, HYPERPOD_LOG_GROUPS_ENV
from nodemedic.contracts.logs import (
    HEARTBEAT_MARK,
    heartbeat_message,
    identity_stream,
    node_log_group,
    registration_message,
)
from nodemedic.contracts.substrates import hyperpod_log_group
from nodemedic.origin.signing import KEY_BYTES, Registration, sign
from tests.support.classify import CONTEXT, World
from tests.support.fuzz import tracer_unlogged
from tests.support.origin import AUTHORITY, put
from tests.support.paths import EVENTS
from tests.support.payloads import decoded, wrap
from world.aws.identity import identity_document
from world.aws.origins import kms_encrypt

CASES = 10_000
SEED = 20261124
Payload = dict[str, Any]
Case = Callable[[random.Random, Payload], Payload]
ODD_VALUES: tuple[Any, ...] = (None, 0, -1, 1.5e30, "", "x" * 300, [], {}, True, [1, 2])


ALPHABET = "NVRM: Xid (PCI:0000:2b:00) 79, ,;[]\\x\t\u00e9\u2603\U0001f525\ud800"


def _text(rng: random.Random, size: int) -> str:
    """``size`` characters: a random piece of up to 64, repeated (long lines are cheap to
    make and as hard to classify as random ones)."""
    piece = "".join(rng.choices(ALPHABET, k=min(size, 64)))
    return (piece * (size // max(len(piece), 1) + 1))[:size]


def _events(payload: Payload) -> list[Any]:
    events: list[Any] = payload["logEvents"]
    return events


CLUSTER = "trn-prod"
INSTANCES = ("i-0a1b2c3d4e5f60718", "i-0ffffffffffffff01", "i-0123456789abcdef0")
"""Registered with junk after (the first), junk before (the second), never (the third)."""
KEYS = {INSTANCES[0]: b"\x01" * KEY_BYTES, INSTANCES[1]: b"\x02" * KEY_BYTES}
XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1829, name=python3, GPU has fallen off the bus."
STREAMS = ("kmsg", "health", "deep-check")
JUNK_JSON: tuple[str, ...] = (
    '{"check": "nvidia-smi", "status": "fail"',
    '{"check": "nvidia-smi", "device": "node", "status": "fail", "reason": 1e999}',
    '{"check": [], "device": {}, "status": null, "reason": "GpuMissing"}',
    '{"interval": ' + "9" * 5000 + "}",
    '{"interval": ' + "9" * 400 + ', "lines_read": -1}',
    "NaN",
    '"just a string"',
    "[1, 2, 3]",
    "",
)


# Changes that keep the payload valid -----------------------------------------------------


def any_message(rng: random.Random, data: Payload) -> Payload:
    for event in _events(data):
        event["message"] = _text(rng, rng.choice((0, 1, 40, 2_000, 70_000)))
    return data


def fault_in_noise(rng: random.Random, data: Payload) -> Payload:
    event = rng.choice(_events(data))
    event["message"] = _text(rng, 30) + " NVRM: Xid (PCI:0000:2b:00): 48, " + _text(rng, 30)
    return data


def edge_timestamps(rng: random.Random, data: Payload) -> Payload:
    for event in _events(data):
        event["timestamp"] = rng.choice((0, 1, 253402214400000, 1763836200000))
    return data


# Changes that break it -------------------------------------------------------------------


def odd_field(rng: random.Random, data: Payload) -> Payload:
    name = rng.choice(("messageType", "logGroup", "logStream", "logEvents"))
    data[name] = rng.choice([v for v in ODD_VALUES if not isinstance(v, list)])
    return data


def missing_field(rng: random.Random, data: Payload) -> Payload:
    del data[rng.choice(("messageType", "logGroup", "logStream", "logEvents"))]
    return data


def odd_event(rng: random.Random, data: Payload) -> Payload:
    events = _events(data)
    index = rng.randrange(len(events))
    if rng.random() < 0.3:
        events[index] = rng.choice(ODD_VALUES)
    else:
        name = rng.choice(("id", "timestamp", "message"))
        if rng.random() < 0.3:
            del events[index][name]
        elif name == "timestamp":
            events[index][name] = rng.choice(
                (1.5e30, -1, 253402300800000, 10**20, "1763836200000", None, 1.5, float("nan"))
            )
        elif name == "message":
            events[index][name] = rng.choice((None, 7, [], {}))
        else:
            events[index][name] = rng.choice(({}, []))
    return data


def foreign_names(rng: random.Random, data: Payload) -> Payload:
    if rng.random() < 0.5:
        data["logStream"] = rng.choice(("", "i-xyz/kmsg", "i-0a1b2c3d4e5f60718/other", "kmsg"))
    else:
        data["logGroup"] = rng.choice(("", "/nodemedic//nodes", "/aws/lambda/x", "/nodemedic/"))
    return data


def _nested(rng: random.Random) -> str:
    depth = rng.choice((31, 33, 999, 1_000, 1_021, 8_192, 70_000))
    return rng.choice(
        (
            "[" * depth,
            "[" * depth + "]" * depth,
            '{"a":' * depth + "1" + "}" * depth,
            '{"check": "nvidia-smi", "figures": ' + "[" * depth + "]" * depth + "}",
            '["' + "\\" * depth + '"' + "[" * depth,
        )
    )


def bad_json(rng: random.Random, data: Payload) -> Payload:
    """Nested, cut or odd JSON in any stream kind (a kmsg line as a heartbeat's)."""
    kind = rng.choice(STREAMS)
    data["logStream"] = f"{rng.choice(INSTANCES)}/{kind}"
    for event in _events(data):
        text = _nested(rng) if rng.random() < 0.5 else rng.choice(JUNK_JSON)
        head = HEARTBEAT_MARK if kind == "kmsg" and rng.random() < 0.8 else ""
        event["message"] = head + text
    return data


def huge_lines(rng: random.Random, data: Payload) -> Payload:
    """Lines up to the 256 KiB CloudWatch Logs stores per event, in any stream kind."""
    data["logStream"] = f"{INSTANCES[0]}/{rng.choice(STREAMS)}"
    event = rng.choice(_events(data))
    event["message"] = rng.choice(("[", "{", " ", "x")) * rng.choice((8_193, 65_536, 262_144))
    return data


def signed_lines(rng: random.Random, data: Payload) -> Payload:
    """Fault lines signed with the node's key, another node's, a made-up one, or a mark
    that only looks like a signature."""
    instance = rng.choice(INSTANCES)
    data["logStream"] = f"{instance}/kmsg"
    for event in _events(data):
        line = rng.choice((event["message"], XID79, _text(rng, 40)))
        key = rng.choice([*KEYS.values(), bytes(KEY_BYTES), rng.randbytes(KEY_BYTES)])
        signed = sign(key, rng.choice(INSTANCES), event["timestamp"], line)
        event["message"] = rng.choice((signed, signed[:30] + signed[31:], "[signed " + line))
    return data


def heartbeats(rng: random.Random, data: Payload) -> Payload:
    data["logStream"] = f"{rng.choice(INSTANCES)}/kmsg"
    for event in _events(data):
        state = {rng.choice(("interval", "lines_read", "x")): rng.choice((0, 300, 2**70, -5))}
        event["message"] = rng.choice((heartbeat_message(state), HEARTBEAT_MARK + _text(rng, 30)))
    return data


HYPERPOD_GROUP = hyperpod_log_group("ml-cluster", "9ixsdpsjyi2y")
HYPERPOD_REAL = tuple(p.read_text().strip() for p in sorted((EVENTS / "hyperpod").glob("*.json")))
HYPERPOD_STREAMS = (
    f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCES[0]}",
    f"DeepHealthCheckResults/{INSTANCES[1]}",
    "DeepHealthCheckResults/run-1",
    f"LifecycleConfig/worker-group-1/{INSTANCES[2]}",
    "SagemakerHealthMonitoringAgent/",
)


def hyperpod_events(rng: random.Random, data: Payload) -> Payload:
    """SageMaker HyperPod's events, whole, cut, nested or junk, on any of its streams, of
    the listed group or another: classified, or refused and counted, never malformed."""
    data["logGroup"] = rng.choice((HYPERPOD_GROUP, HYPERPOD_GROUP + "0"))
    data["logStream"] = rng.choice(HYPERPOD_STREAMS)
    for event in _events(data):
        real = rng.choice(HYPERPOD_REAL)
        event["message"] = rng.choice(
            (real, real[: rng.randrange(len(real))], _nested(rng), rng.choice(JUNK_JSON))
        )
    return data


def registration_lines(rng: random.Random, data: Payload) -> Payload:
    """Registration lines among the others, in any stream of a node: sealed-looking junk
    KMS refuses, text that is no base64, nothing, or more than a batch may decrypt."""
    data["logStream"] = f"{rng.choice(INSTANCES)}/{rng.choice(STREAMS)}"
    for event in _events(data):
        if rng.random() < 0.7:
            sealed = rng.choice(
                (base64.b64encode(rng.randbytes(200)).decode(), _text(rng, 40), "", "A" * 70_000)
            )
            event["message"] = registration_message(sealed)
    return data


def any_stream(rng: random.Random, data: Payload) -> Payload:
    data["logStream"] = f"{rng.choice(INSTANCES)}/{rng.choice((*STREAMS, 'identity'))}"
    return data


GOOD: tuple[Case, ...] = (
    any_message,
    fault_in_noise,
    edge_timestamps,
    bad_json,
    huge_lines,
    signed_lines,
    heartbeats,
    registration_lines,
    any_stream,
    hyperpod_events,
)
BAD: tuple[Case, ...] = (odd_field, missing_field, odd_event, foreign_names)


def _broken_envelope(rng: random.Random) -> Any:
    raw = json.dumps(decoded("xid79-with-noise.json")).encode()
    choices: list[Any] = [
        {},
        {"awslogs": {}},
        {"awslogs": {"data": rng.choice(ODD_VALUES)}},
        {"awslogs": {"data": _text(rng, 50)}},
        {"awslogs": {"data": base64.b64encode(raw).decode()}},  # not gzip
        {"awslogs": {"data": base64.b64encode(gzip.compress(raw)[:-9]).decode()}},  # cut
        {"awslogs": {"data": base64.b64encode(gzip.compress(b"\xff\xfe{")).decode()}},
        {"awslogs": {"data": base64.b64encode(gzip.compress(b"[1, 2]")).decode()}},
        {"awslogs": {"data": base64.b64encode(gzip.compress(b"[" * 100_000)).decode()}},
        {"awslogs": {"data": base64.b64encode(gzip.compress(raw)).decode()[:-3] + "!!!"}},
        {"Records": [{"body": "{}"}]},
    ]
    return rng.choice(choices)


def _cases(rng: random.Random) -> list[tuple[str, bool, Any]]:
    """(what, valid, event) for every case."""
    bases = [decoded(name) for name in ("xid79-with-noise.json", "health-mixed.json")]
    found: list[tuple[str, bool, Any]] = []
    for number in range(CASES):
        roll = rng.random()
        data = copy.deepcopy(rng.choice(bases))
        if roll < 0.35:
            case = rng.choice(GOOD)
            found.append((f"{number}:{case.__name__}", True, wrap(case(rng, data))))
        elif roll < 0.85:
            case = rng.choice(BAD)
            found.append((f"{number}:{case.__name__}", False, wrap(case(rng, data))))
        else:
            found.append((f"{number}:envelope", False, _broken_envelope(rng)))
    return found


@pytest.fixture
def registered(aws: World, ledger: str, monkeypatch: pytest.MonkeyPatch) -> World:
    """The cluster's origin key and log group; the first two nodes registered, next to
    junk that no KMS key sealed, which KMS refuses; heartbeats recorded in the ledger."""
    monkeypatch.setenv(ENV_IDENTITY_CERTIFICATES, AUTHORITY.certificate_pem)
    monkeypatch.setenv(HYPERPOD_LOG_GROUPS_ENV, HYPERPOD_GROUP)
    monkeypatch.setenv(ENV_CLUSTER, CLUSTER)
    kms, logs = boto3.client("kms"), boto3.client("logs")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName=f"alias/nodemedic-{CLUSTER}-origin", TargetKeyId=key)
    logs.create_log_group(logGroupName=node_log_group(CLUSTER))
    junk = base64.b64encode(bytes(200)).decode("ascii")
    put(logs, CLUSTER, identity_stream(INSTANCES[1]), junk)
    for instance, secret in KEYS.items():
        document = identity_document(instance, kms.meta.region_name)
        registration = Registration(instance, "boot-1", secret, document, AUTHORITY.sign(document))
        sealed = sealed_registration(kms_encrypt(kms), CLUSTER, registration)
        put(logs, CLUSTER, identity_stream(instance), sealed)
    put(logs, CLUSTER, identity_stream(INSTANCES[0]), junk)
    return aws


@pytest.mark.slow
def test_every_generated_payload_is_classified_or_refused(registered: World) -> None:
    aws = registered
    malformed = aws["module"].MalformedPayload
    wrong: list[str] = []
    counts = {True: 0, False: 0}
    with tracer_unlogged():
        for what, valid, event in _cases(random.Random(SEED)):
            try:
                result = aws["handler"](event, CONTEXT)
            except malformed:
                if valid:
                    wrong.append(f"{what}: refused")
                counts[False] += 1
                continue
            except Exception as exc:
                wrong.append(f"{what}: {exc!r}")
                continue
            if not valid:
                wrong.append(f"{what}: classified {result}")
            counts[True] += 1
    assert wrong == [], wrong[:20]
    assert counts[True] > 2_000 and counts[False] > 6_000, counts
