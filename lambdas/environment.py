"""A function's environment as one typed model, validated before the handler does anything.

Each function has a frozen dataclass of what it reads (``lambdas/<function>/env.py``) with
``from_environ(environ)``, which reads every variable of it from ``environ`` (a mapping:
``os.environ`` on Lambda, a dict in tests) and raises ``EnvError`` naming the variable that
is missing or malformed. A handler takes its model from ``cached(from_environ)`` on every
invocation: a bad setting fails the first invocation after a cold start, whole, instead of
a branch of some later one.

The variables' names are the contracts' (``nodemedic.contracts.env``); a model reads them
as ``environ[NAME]``, ``environ.get(NAME, ...)`` or through a reader here called
``reader(environ, NAME, ...)``, the spellings the stack's test of the environment
(tests/integration/stacks/test_environment.py) finds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TypeVar

M = TypeVar("M")


class EnvError(ValueError):
    """A variable the function needs is missing or malformed; the message names it."""


def required(environ: Mapping[str, str], name: str) -> str:
    """The variable's value; missing or empty is an error (no function can use an empty
    table name or ARN)."""
    value = environ.get(name, "")
    if not value:
        raise EnvError(f"{name} is not set; the stack sets it on this function")
    return value


def one_of(environ: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    """The variable's value, ``default`` where it is not set; anything outside ``allowed``
    is an error rather than a silent fallback."""
    value = environ.get(name, default)
    if value not in allowed:
        raise EnvError(f"{name}={value!r} is none of {', '.join(allowed)}")
    return value


def seconds(environ: Mapping[str, str], name: str, default: int) -> int:
    """The variable's whole number of seconds, at least 1; ``default`` where it is not set.
    Anything else is an error: a limit read as nothing would lift it."""
    value = environ.get(name)
    if value is None:
        return default
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise EnvError(f"{name}={value!r} is not a whole number of seconds, at least 1")
    return int(value)


def cached(from_environ: Callable[[Mapping[str, str]], M]) -> Callable[[], M]:
    """The accessor of ``from_environ(os.environ)``, parsed once per environment: on Lambda,
    whose environment never changes, once per cold start. Keyed on the whole environment
    rather than once per process, because the tests change variables between cases and the
    local world runs every function in one process, each under its own variables."""

    @lru_cache(maxsize=8)
    def parsed(environment: frozenset[tuple[str, str]]) -> M:
        return from_environ(dict(environment))

    def accessor() -> M:
        return parsed(frozenset(os.environ.items()))

    return accessor
