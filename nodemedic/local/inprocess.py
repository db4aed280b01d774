"""Run Lambda handlers in this process when moto invokes a function.

moto runs Lambda code only in Docker. This is the one adapter the local world puts into
moto: ``LambdaFunction._invoke_lambda(self, event) -> (body, is_error, logs)`` is replaced
by a call of the function's own handler, found by its ``Handler`` string (for example
``lambdas.kube.handler.handler``), with the function's environment variables set. Both
paths that invoke functions go through it: Step Functions ``lambda:invoke`` tasks and
CloudWatch Logs subscription delivery.

Invocations run one at a time, because a handler reads its configuration from
``os.environ`` and each function has its own.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import os
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from moto.awslambda.models import LambdaFunction

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


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    with _lock, _environment(variables):
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
    return body, is_error, captured.getvalue()


def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
    body, is_error, logs = invoke(self, event)
    # As moto's own implementation does: the invocation's output lands in the function's
    # log group, where a person looking at the local world expects it.
    self.logs_backend.ensure_log_group(self.logs_group_name)
    self.save_logs(logs + body)
    return body, is_error, logs


@contextlib.contextmanager
def handlers_in_process() -> Iterator[None]:
    """While active, every moto Lambda invocation runs its handler in this process."""
    original = LambdaFunction._invoke_lambda
    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    try:
        yield
    finally:
        LambdaFunction._invoke_lambda = original  # type: ignore[method-assign]
