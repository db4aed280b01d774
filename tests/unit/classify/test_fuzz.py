"""10,000 generated payloads through the classify handler: every one is either classified
or refused as ``MalformedPayload`` (which Lambda retries, then sends to the function's
dead-letter queue); no other exception escapes, so nothing is lost without a trace.

Payloads are made from the real subscription payloads in ``tests/events/subscription``,
each changed in one way: the ways that keep it a valid payload (any message text, any
stream of the node) must be classified, the ways that break it must be refused. The
generator is seeded: a failure names the case and reproduces.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import random
from collections.abc import Callable
from typing import Any

from tests.support.classify import CONTEXT, World
from tests.support.payloads import decoded, wrap

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


GOOD: tuple[Case, ...] = (any_message, fault_in_noise, edge_timestamps)
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
        if roll < 0.3:
            case = rng.choice(GOOD)
            found.append((f"{number}:{case.__name__}", True, wrap(case(rng, data))))
        elif roll < 0.85:
            case = rng.choice(BAD)
            found.append((f"{number}:{case.__name__}", False, wrap(case(rng, data))))
        else:
            found.append((f"{number}:envelope", False, _broken_envelope(rng)))
    return found


def test_every_generated_payload_is_classified_or_refused(aws: World) -> None:
    malformed = aws["module"].MalformedPayload
    wrong: list[str] = []
    counts = {True: 0, False: 0}
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
