"""Run Lambda handlers in this process when moto invokes a function.

moto runs Lambda code only in Docker. While ``handlers_in_process`` is active, moto's
invocation of a function (``motopatch.lambda_invocations``) is ``invoke``: a call of the
function's own handler, found by its ``Handler`` string (for example
``lambdas.kube.handler.handler``), with the function's environment variables set. Both
paths that invoke functions go through it: Step Functions ``lambda:invoke`` tasks and
CloudWatch Logs subscription delivery.

A handler reads its configuration from ``os.environ`` and each function has its own. The
function's variables are an overlay seen by the invoking thread only (``ThreadEnviron``):
other threads, moto's Step Functions tasks making their boto3 clients among them, must not
see the process environment change under them (a variable removed while botocore copies
the environment is a ``KeyError`` in an unrelated task). Invocations still run one at a
time: Powertools keeps its log keys and metrics in module-level state. A world that needs
them side by side runs them in worker processes instead (``lambdaworkers.py``).

What a handler prints goes to its function's log group, as Lambda sends standard output
there: Powertools prints its metrics as Embedded Metric Format lines, which CloudWatch
Logs turns into metrics (``world.aws.cloudwatch``). Standard output is captured for the
invoking thread only (``ThreadOutput``), as the environment is overlaid.

Public interface: ``handlers_in_process()`` (context manager), ``invoke(function, event)``,
``ThreadEnviron``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import boto3

from stacks.bundling import BUNDLED_PACKAGES
from world.aws import lambdacall, motopatch
from world.aws.lambdacall import ThreadOutput, context_of, variables_of

_lock = threading.RLock()


class ThreadEnviron(MutableMapping[str, str]):
    """``os.environ`` with a per-thread overlay: inside ``overlay(variables)`` the calling
    thread sees ``variables`` on top of the process environment (and its own changes go to
    the overlay); every other thread sees the process environment, unchanged."""

    _REMOVED = None

    def __init__(self, process: MutableMapping[str, str]) -> None:
        self.process = process
        self._local = threading.local()

    def _layer(self) -> dict[str, str | None] | None:
        layer: dict[str, str | None] | None = getattr(self._local, "layer", None)
        return layer

    @contextlib.contextmanager
    def overlay(self, variables: dict[str, str]) -> Iterator[None]:
        outer = self._layer()
        self._local.layer = {**(outer or {}), **variables}
        try:
            yield
        finally:
            self._local.layer = outer

    def __getitem__(self, key: str) -> str:
        layer = self._layer()
        if layer is not None and key in layer:
            value = layer[key]
            if value is None:
                raise KeyError(key)
            return value
        return self.process[key]

    def __setitem__(self, key: str, value: str) -> None:
        layer = self._layer()
        if layer is None:
            self.process[key] = value
        else:
            layer[key] = value

    def __delitem__(self, key: str) -> None:
        layer = self._layer()
        if layer is None:
            del self.process[key]
        elif key not in self:
            raise KeyError(key)
        else:
            layer[key] = self._REMOVED

    def __iter__(self) -> Iterator[str]:
        layer = self._layer() or {}
        process = list(self.process)
        keys = [k for k in process if layer.get(k, "") is not None]
        keys += [k for k, v in layer.items() if v is not None and k not in self.process]
        return iter(keys)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, str]:
        return dict(self)


_STAND_INS: dict[int, ThreadOutput] = {}
"""Every stand-in ever put in ``sys.stdout``, by the id of the stream it wraps, kept for the
process's life: CPython's ``print`` holds ``sys.stdout`` by a borrowed reference while it
writes (python/cpython#130163), so a stand-in taken out of ``sys.stdout`` while another
thread prints through it must not be freed under that print. One per stream: as many as
the tests' captures, not as the invocations."""


@contextlib.contextmanager
def _printed() -> Iterator[io.StringIO]:
    """What the calling thread prints while the block runs; ``sys.stdout`` is whatever it
    was before, for every other thread and after the block (a test's capture included)."""
    current = sys.stdout
    if isinstance(current, ThreadOutput):
        output = current
    else:
        output = _STAND_INS.get(id(current)) or ThreadOutput(current)
        _STAND_INS[id(current)] = output  # held for good, stream and all: the id stays its own
    sys.stdout = output
    try:
        with output.captured() as printed:
            yield printed
    finally:
        if sys.stdout is output and output is not current:
            sys.stdout = output.stream


def _overlay(variables: dict[str, str]) -> contextlib.AbstractContextManager[None]:
    environ = os.environ
    if not isinstance(environ, ThreadEnviron):
        raise RuntimeError("handlers run in-process only inside handlers_in_process()")
    return environ.overlay(variables)


def invoke(function: Any, event: Any) -> tuple[str, bool, str]:
    """Run ``function``'s handler on ``event`` as Lambda would (``lambdacall.call``): the
    body, whether it is an error, and what the handler logged and printed."""
    with _lock, _overlay(variables_of(function)), _printed() as printed:
        # Its time runs from here, not while it waited for the invocations ahead of it.
        body, is_error, logged = lambdacall.call(function.handler, event, context_of(function))
    return body, is_error, logged + printed.getvalue()


def cold_start() -> None:
    """Forget what the handlers cached, as a new Lambda container would: clients made for
    another moto endpoint (an earlier world in this process, or an in-process mock), and
    boto3's default session. That session reads the environment it was made under for
    ever: one made before ``os.environ`` became this world's ``ThreadEnviron`` (by a thread
    an earlier world left running) never sees a function's region."""
    boto3.DEFAULT_SESSION = None
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in BUNDLED_PACKAGES:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()


@contextlib.contextmanager
def handlers_in_process() -> Iterator[None]:
    """While active, every moto Lambda invocation runs its handler in this process (and
    ``os.environ`` is a ``ThreadEnviron`` over the process environment). The handlers
    start cold and are left cold: nothing they cached outlives the block."""
    process = os.environ
    # Not meant to change the environment: a view of it, restored on the way out.
    os.environ = ThreadEnviron(process)  # type: ignore[assignment]  # noqa: B003
    try:
        with motopatch.lambda_invocations(invoke):
            cold_start()
            try:
                yield
            finally:
                cold_start()
    finally:
        os.environ = process  # noqa: B003
