"""10,000 seeded payloads (``tests.support.fuzz``) through the job monitor's handler: its
subscription deliveries changed in their envelope and in the Container Insights records
they carry, and its schedule's event changed. Every delivery is read or refused as
``MalformedPayload`` (which Lambda retries, then sends to the dead-letter queue); no other
exception escapes. The cluster is a stand-in that raises ``Touched`` at the first call: a
delivery that gets there was read to its pods, which is what the records decide; what the
monitor does with a job is its own tests' (tests/unit/nodemedic/jobs, tests/e2e/test_jobs.py).
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import random
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from lambdas.jobs import handler as jobs
from lambdas.subscription import MalformedPayload
from tests.support.fuzz import Untouchable, kinds, mutated, outcomes, payloads
from tests.support.lambda_context import lambda_context
from tests.support.payloads import RECORD, delivery

CASES = 10_000
SEED = 20261129
SCHEDULED = {"detail-type": jobs.SCHEDULED, "source": "aws.events", "detail": {}}


def _decoded(wrapped: dict[str, Any]) -> Any:
    return json.loads(gzip.decompress(base64.b64decode(wrapped["awslogs"]["data"])))


def _wrapped(data: Any) -> dict[str, Any]:
    raw = gzip.compress(json.dumps(data).encode())
    return {"awslogs": {"data": base64.b64encode(raw).decode()}}


def cases(rng: random.Random) -> Iterator[tuple[str, Any]]:
    """A third each: deliveries changed, their records changed, the schedule's event (or
    anything at all, unwrapped) changed."""
    seed = _decoded(delivery("ml-team", "llama", "llama-0", ["step 1", "CUDA error", "x"]))
    third = CASES // 3
    for name, data in payloads(rng, [seed], third):
        yield f"delivery-{name}", _wrapped(data)
    record = copy.deepcopy(RECORD)
    record["kubernetes"]["labels"] = {"job-name": "llama"}
    for number in range(third):
        data = copy.deepcopy(seed)
        for event in data["logEvents"]:
            event["message"] = json.dumps(mutated(rng, record))
        yield f"record-{number}", _wrapped(data)
    yield from payloads(rng, [SCHEDULED, seed], CASES - 2 * third)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = SimpleNamespace(cluster="demo", ledger_table="ledger")
    monkeypatch.setattr(jobs, "env", lambda: settings)
    monkeypatch.setattr(jobs, "_store", lambda table: SimpleNamespace(heard=lambda *_: None))
    monkeypatch.setattr(
        jobs, "_cluster", lambda *_: SimpleNamespace(core=Untouchable(), batch=Untouchable())
    )


@pytest.mark.slow
@pytest.mark.usefixtures("offline")
def test_every_payload_is_read_or_refused_as_malformed() -> None:
    context = lambda_context("jobs", memory_mb=256, timeout_seconds=60)
    ended, escaped = outcomes(
        lambda payload: jobs.handler(payload, context),
        cases(random.Random(SEED)),
        MalformedPayload,
    )
    assert escaped == [], kinds(escaped)
    # A delivery that returns found no pod to judge: read whole, nothing to do.
    assert ended["refused"] > 2_000 and ended["reached"] > 2_000, ended
    assert ended["returned"] > 100, ended
