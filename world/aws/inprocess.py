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
time: Powertools keeps its log keys and metrics in module-level state.

What a handler prints goes to its function's log group, as Lambda sends standard output
there: Powertools prints its metrics as Embedded Metric Format lines, which CloudWatch
Logs turns into metrics (``world.aws.cloudwatch``). Standard output is captured for the
invoking thread only (``ThreadOutput``), as the environment is overlaid.

Public interface: ``handlers_in_process()`` (context manager), ``invoke(function, event)``,
``resolve_handler(spec)``, ``Context``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import os
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, TextIO

import boto3

from stacks.bundling import BUNDLED_PACKAGES
from world.aws import motopatch

Handler = Callable[[Any, Any], Any]
_lock = threading.RLock()


@dataclass
class Context:
    """The parts of the Lambda context object handlers and Powertools read."""

    function_name: str
    function_version: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    aws_request_id: str
    log_group_name: str
    log_stream_name: str
    timeout_seconds: int

    def get_remaining_time_in_millis(self) -> int:
        return self.timeout_seconds * 1000


def resolve_handler(spec: str) -> Handler:
    """``package.module.function`` → the function."""
    module_name, _, attribute = spec.rpartition(".")
    if not module_name:
        raise ValueError(f"handler {spec!r} is not module.function")
    handler: Handler = getattr(importlib.import_module(module_name), attribute)
    return handler


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


class ThreadOutput:
    """A stand-in for ``sys.stdout`` whose writes from the thread inside ``captured()`` go to
    that thread's buffer; every other thread writes to ``stream``, unchanged, or to the
    process's own standard output once ``stream`` is closed: a test's capture may end while
    a Lambda runs, and the world's other threads print on. Not an ``io`` object: one of
    those closes itself when collected, and a close that fails there is an error no caller
    sees."""

    def __init__(self, stream: TextIO | ThreadOutput) -> None:
        self.stream = stream  # another Lambda's, when a test's capture put its own back
        self._local = threading.local()

    @contextlib.contextmanager
    def captured(self) -> Iterator[io.StringIO]:
        self._local.buffer = io.StringIO()
        try:
            yield self._local.buffer
        finally:
            self._local.buffer = None

    @property
    def closed(self) -> bool:
        return self.stream.closed

    def write(self, text: str) -> int:
        buffer: TextIO | None = getattr(self._local, "buffer", None)
        return (buffer or self._passed()).write(text)

    def flush(self) -> None:
        self._passed().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _passed(self) -> TextIO | ThreadOutput:
        return sys.__stdout__ if self.stream.closed and sys.__stdout__ else self.stream


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
    """Run ``function``'s handler on ``event`` as Lambda would: the result as JSON, or an
    error body (``errorType``, ``errorMessage``) that Step Functions matches in Retry and
    Catch by ``errorType``."""
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    context = Context(
        function_name=function.function_name,
        function_version=str(function.version),
        invoked_function_arn=function.function_arn,
        memory_limit_in_mb=int(function.memory_size),
        aws_request_id=str(uuid.uuid4()),
        log_group_name=f"/aws/lambda/{function.function_name}",
        log_stream_name="local",
        timeout_seconds=int(function.timeout),
    )
    variables = {
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "_HANDLER": function.handler,
        **{k: str(v) for k, v in (function.environment_vars or {}).items()},
    }
    captured = io.StringIO()
    log_handler = logging.StreamHandler(captured)
    root = logging.getLogger()
    with _lock, _overlay(variables), _printed() as printed:
        root.addHandler(log_handler)
        try:
            result = resolve_handler(function.handler)(event, context)
            body, is_error = json.dumps(result, default=str), False
        except Exception as exc:  # the handler's failure is the invocation's result
            body = json.dumps(
                {
                    "errorType": type(exc).__name__,
                    "errorMessage": str(exc),
                    "stackTrace": traceback.format_exception(exc),
                }
            )
            is_error = True
        finally:
            root.removeHandler(log_handler)
    return body, is_error, captured.getvalue() + printed.getvalue()


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
