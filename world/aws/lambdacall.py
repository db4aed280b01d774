"""One Lambda invocation as the world's two runners make it (``inprocess``: a thread of the
world's process; ``lambdaworkers``: a warm worker process per function): the context object
handlers read, the handler found by its ``Handler`` string, and the call's outcome as Lambda
reports it. Only the standard library: a worker process imports this and the handler, not
moto.

Public interface: ``Context``, ``context_of(function)``, ``variables_of(function)``,
``resolve_handler(spec)``, ``call(spec, event, context)``, ``ThreadOutput``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

Handler = Callable[[Any, Any], Any]


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
    deadline: float | None = None
    """When the invocation times out (epoch seconds, so a worker process reads it alike);
    None: the call has just begun whenever asked (a test's context)."""

    def get_remaining_time_in_millis(self) -> int:
        if self.deadline is None:
            return self.timeout_seconds * 1000
        return max(0, int((self.deadline - time.time()) * 1000))


def context_of(function: Any) -> Context:
    """The context of one invocation of moto's ``function``: a fresh request id each time."""
    return Context(
        function_name=function.function_name,
        function_version=str(function.version),
        invoked_function_arn=function.function_arn,
        memory_limit_in_mb=int(function.memory_size),
        aws_request_id=str(uuid.uuid4()),
        log_group_name=f"/aws/lambda/{function.function_name}",
        log_stream_name="local",
        timeout_seconds=int(function.timeout),
        deadline=time.time() + int(function.timeout),
    )


def variables_of(function: Any) -> dict[str, str]:
    """What Lambda puts in moto's ``function``'s environment: its runtime's variables and
    the function's own."""
    return {
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "_HANDLER": function.handler,
        **{k: str(v) for k, v in (function.environment_vars or {}).items()},
    }


def resolve_handler(spec: str) -> Handler:
    """``package.module.function`` → the function."""
    module_name, _, attribute = spec.rpartition(".")
    if not module_name:
        raise ValueError(f"handler {spec!r} is not module.function")
    handler: Handler = getattr(importlib.import_module(module_name), attribute)
    return handler


def call(spec: str, event: Any, context: Context) -> tuple[str, bool, str]:
    """Run the handler ``spec`` on ``event``: the result as JSON, or an error body
    (``errorType``, ``errorMessage``) that Step Functions matches in Retry and Catch by
    ``errorType``; whether it is an error; and what the call logged through ``logging``'s
    root logger. The caller captures what it prints."""
    if isinstance(event, str | bytes):
        event = json.loads(event or "{}")
    captured = io.StringIO()
    log_handler = logging.StreamHandler(captured)
    root = logging.getLogger()
    root.addHandler(log_handler)
    try:
        result = resolve_handler(spec)(event, context)
        return json.dumps(result, default=str), False, captured.getvalue()
    except Exception as exc:  # the handler's failure is the invocation's result
        return error_body(type(exc).__name__, str(exc), exc), True, captured.getvalue()
    finally:
        root.removeHandler(log_handler)


def error_body(kind: str, message: str, exc: BaseException | None = None) -> str:
    """An invocation's error as Lambda answers it."""
    trace = traceback.format_exception(exc) if exc else []
    return json.dumps({"errorType": kind, "errorMessage": message, "stackTrace": trace})


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
