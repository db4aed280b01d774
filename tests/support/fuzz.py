"""Seeded payloads for the Lambda entry points' fuzz tests: real payloads changed in one to
three places (a value replaced by one of another type or an edge of its own, a field
dropped or added, a list emptied or repeated, text cut), and events that are no object at
all. Every value is one JSON can carry (Lambda hands a handler what its runtime's
``json.loads`` made, which reads ``NaN`` and ``Infinity`` too). The generator is seeded: a
failure names its case, and the case reproduces.
"""

from __future__ import annotations

import copy
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

NESTED: Any = []
for _ in range(200):
    NESTED = [NESTED]

ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    2**63,
    -(2**63) - 1,
    10**400,
    1.5e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    "",
    " ",
    "x" * 5000,
    "\ud800",
    "\u202e\x1b[31m",
    "NaN",
    "null",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-12:00",
    "Fri, 31 Dec 9999 23:59:59 -1200",
    "2026-11-22T18:30:00",
    "2026-11-22T18:30:00Z",
    "i-0123456789abcdef0",
    "arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0",
    [],
    [None],
    [1, "a", {}],
    {},
    {"": None},
    NESTED,
)
"""Values every field meets sooner or later: other types, a type's edges, times at the
ends of the calendar, ids of the right shape, deep nesting."""


def _paths(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``value`` (the whole of it too), as keys and indexes from the top."""
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*here, key))
    elif isinstance(value, list) and value is not NESTED:
        for index, item in enumerate(value):
            yield from _paths(item, (*here, index))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _odd(rng: random.Random) -> Any:
    """One of ``ODD_VALUES``, a copy of its own: a later change must not reach the next case."""
    value = rng.choice(ODD_VALUES)
    return value if value is NESTED else copy.deepcopy(value)


def _changed(rng: random.Random, old: Any) -> Any:
    """A replacement for ``old``: an odd value, or ``old`` bent in a way of its own type."""
    if isinstance(old, str) and old and rng.random() < 0.4:
        cut = rng.randrange(len(old))
        return rng.choice((old[:cut], old[cut:], old * 3, old.upper(), old + "\x00"))
    if isinstance(old, bool) or not isinstance(old, int | float) or rng.random() < 0.5:
        return _odd(rng)
    return rng.choice((-old, old * 10**6, old + 1, str(old), old / 3 if abs(old) < 1e300 else 0.5))


def mutated(rng: random.Random, seed: Any) -> Any:
    """A copy of ``seed`` changed in one to three places."""
    payload = copy.deepcopy(seed)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(_paths(payload)))
        if not path:
            return _odd(rng) if rng.random() < 0.2 else payload
        parent, last = _at(payload, path[:-1]), path[-1]
        way = rng.random()
        if way < 0.15 and isinstance(parent, dict):
            del parent[last]
        elif way < 0.25 and isinstance(parent, dict):
            parent[rng.choice(("extra", "", "op", "detail", "time"))] = _odd(rng)
        elif way < 0.35 and isinstance(parent[last], list):
            parent[last] = parent[last] * rng.randint(0, 50)
        else:
            parent[last] = _changed(rng, parent[last])
    return payload


def payloads(rng: random.Random, seeds: Sequence[Any], count: int) -> Iterator[tuple[str, Any]]:
    """``count`` cases, (name, payload): nine in ten a seed mutated, the rest no object."""
    for number in range(count):
        if rng.random() < 0.1:
            yield f"{number}:not-an-object", _odd(rng)
        else:
            index = rng.randrange(len(seeds))
            yield f"{number}:seed-{index}", mutated(rng, seeds[index])


class Touched(Exception):
    """The handler called the cluster or AWS: every field it read before that was accepted,
    and what happens past the call is the handler's own tests'."""


class Untouchable:
    """A Kubernetes API or boto3 client whose every use raises ``Touched``."""

    def __getattr__(self, name: str) -> Any:
        raise Touched(name)


TRACER_LOG = "aws_lambda_powertools.tracing.tracer"
"""The logger Powertools' tracer logs each exception a handler raises to, traceback and all."""


@contextmanager
def tracer_unlogged() -> Iterator[None]:
    """The tracer's log of each exception a handler raises left out: a fuzz test asserts
    what the handler raises, and formatting the tracebacks of thousands of refused payloads
    (each frame's source parsed again for its carets) took half of what those tests cost."""
    tracer = logging.getLogger(TRACER_LOG)
    was, tracer.disabled = tracer.disabled, True
    try:
        yield
    finally:
        tracer.disabled = was


def outcomes(
    handler: Callable[[Any], object],
    cases: Iterable[tuple[str, Any]],
    refused: type[Exception] | tuple[type[Exception], ...] = (),
) -> tuple[Counter[str], list[str]]:
    """How each case ended (``returned``, ``refused`` with the handler's own error,
    ``reached`` the cluster or AWS), and the cases that escaped with any other exception,
    each named with it."""
    ended: Counter[str] = Counter()
    escaped = []
    with tracer_unlogged():
        for name, payload in cases:
            try:
                handler(payload)
                ended["returned"] += 1
            except refused:
                ended["refused"] += 1
            except Touched:
                ended["reached"] += 1
            except Exception as exc:
                escaped.append(f"{name}: {exc!r}")
    return ended, escaped


def kinds(escaped: Sequence[str]) -> tuple[int, list[str]]:
    """How many escaped, and their distinct kinds (the first 40), for an assertion's message."""
    return len(escaped), sorted({e.split(": ", 1)[1][:150] for e in escaped})[:40]
