"""Step Functions in moto: parse a state machine's definition once, as the service does, and
each JSONPath once (``paths_parsed_once``); make each task's AWS client once
(``clients_made_once``); and let a state machine start another (``start_executions``).

moto's interpreter parses the definition with ANTLR at every ``StartExecution``: about
0.7 s for nodemedic's 45 kB definition on one core, between the call and the first state,
a delay the service does not have (it parses at ``CreateStateMachine``). While
``definitions_parsed_once`` is active (``motopatch.definition_parsing``) each definition
text is parsed, and its evaluation components built, once; every execution of it evaluates
those same components.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto.core import models as moto_models
from moto.core.botocore_stubber import BotocoreStubber, MockRawResponse
from moto.stepfunctions.parser.asl.component.component import Component
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.utils import boto_client

from world.aws import motopatch
from world.aws.motopatch import (
    EXECUTION_ENDINGS,
    FROM_ERROR,
    JSONPATH_PARSE,
    SFN_PARAMETERS,
    replaced,
)

_CLIENT_KEY = ("service_name", "region_name", "endpoint_url", "aws_access_key_id")
"""What tells apart the clients moto's interpreter asks for (the rest is the same each time)."""
_AWS_ENDPOINTS = Config(ignore_configured_endpoint_urls=True)
_parsed: dict[str, tuple[Any, Any]] = {}
_lock = threading.Lock()
_log = logging.getLogger(__name__)


def _parse(moto_parse: motopatch.Parse, definition: str) -> tuple[Any, Any]:
    """(program, syntax tree) of ``definition``, made once. Building the program from the
    tree anew for each execution was a tenth of the world's process in a 150-of-1,500 storm.
    Executions can share it: an execution's state is in its own environment (its stack, and
    its heap, where a retrier counts its attempts under the component's ``heap_key``), and
    the components are only read while they run, except that key, drawn at its first read;
    so every key is drawn here, before any execution reads one."""
    with _lock:
        parsed = _parsed.get(definition)
    if parsed is None:
        # The first parse of a text checks its syntax and raises as moto does; it takes
        # ~0.7 s, so it runs outside the lock, and of two made at once the first kept wins.
        made = moto_parse(definition)
        _draw_heap_keys(made[0])
        with _lock:
            parsed = _parsed.setdefault(definition, made)
    return parsed


def _draw_heap_keys(program: Any) -> None:
    """Read ``heap_key`` of every evaluation component reachable from ``program``: two
    executions that drew a component's key at once would each keep a different one."""
    seen: set[int] = set()
    todo = [program]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Component):
            if isinstance(item, EvalComponent):
                item.heap_key  # noqa: B018 (drawn on first read)
            todo.extend(vars(item).values())
        elif isinstance(item, list | tuple | set | frozenset):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())


@contextlib.contextmanager
def definitions_parsed_once() -> Iterator[None]:
    with motopatch.definition_parsing(_parse):
        try:
            yield
        finally:
            with _lock:
                _parsed.clear()


@contextlib.contextmanager
def paths_parsed_once() -> Iterator[None]:
    """moto's interpreter builds a JSONPath parser, its grammar tables read anew, for each
    path it evaluates: in a 150-of-1,500 storm that was the largest single cost of the
    execution threads, every task's ``Parameters`` and ``ResultPath`` paying it. A path's
    parse never changes and the parsed path is only read (``find``), so each path text is
    parsed once."""
    # The module is loaded with the Preprocessor imported above.
    parse = functools.lru_cache(maxsize=4096)(JSONPATH_PARSE.current())
    with replaced({JSONPATH_PARSE: parse}):
        yield


@contextlib.contextmanager
def clients_made_once() -> Iterator[None]:
    """moto's interpreter makes a new boto3 client for each task it runs (``boto_client_for``),
    the service's model and endpoint rules loaded and resolved each time behind botocore's
    locks: in a 150-of-1,500 storm that was the execution threads' largest cost once the
    paths were parsed once. A client is safe to share between threads, and its arguments
    differ only by region, service and endpoint, so one is made for each of those.

    Each one's calls are answered by moto's backends in this process, as moto's own
    ``mock_aws`` answers them, not over HTTP to the server that also runs here: the request
    is still made and signed by botocore and read by moto's request handlers, but no socket,
    server thread or HTTP parse lies between, which each task of every execution paid."""
    made: dict[tuple[str, ...], Any] = {}
    guard = threading.Lock()
    in_process = BotocoreStubber()
    in_process.enabled = True

    def answered_here(request: Any, **_: Any) -> Any:
        if moto_models.botocore_stubber.enabled:
            return None  # mock_aws answers it; botocore asks every handler, so one answers
        response = in_process.process_request(request)
        if response is None:
            raise RuntimeError(f"the world's AWS serves no {request.url}")
        status, headers, body = response
        return AWSResponse(request.url, status, headers, MockRawResponse(body))

    def client(**arguments: Any) -> Any:
        key = tuple(str(arguments.get(k)) for k in _CLIENT_KEY)
        with guard:
            if key not in made:
                # Addressed to AWS's own endpoint, whose URL moto's handlers know, not to
                # the server the world's AWS_ENDPOINT_URL names.
                config = arguments.get("config") or Config()
                here = {"endpoint_url": None, "config": config.merge(_AWS_ENDPOINTS)}
                made[key] = boto3.client(**{**arguments, **here})
                made[key].meta.events.register("before-send", answered_here)
            return made[key]

    with mock.patch.object(boto_client, "boto3", SimpleNamespace(client=client)):
        yield


@contextlib.contextmanager
def start_executions() -> Iterator[None]:
    """Let a state machine start another with the native ``states:startExecution`` task.

    moto hands the task's parameters to boto3 as the States Language names them
    (``StateMachineArn``, ``Name``, ``Input``), where the Step Functions API spells them
    ``stateMachineArn``, ``name``, ``input``: the call fails with a ``KeyError``. Step
    Functions maps them onto the API's input shape, and so does the replacement, with
    moto's own mapping (``_to_boto_request``). The label requests start remediations so.
    """
    import botocore.session

    original = SFN_PARAMETERS.current()
    api = botocore.session.get_session().get_service_model("stepfunctions")

    def normalise(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        action = service_action_name or self.resource.api_action
        operation = api.operation_model(action[:1].upper() + action[1:])
        self._to_boto_request(parameters, operation.input_shape)

    with replaced({SFN_PARAMETERS: normalise}):
        yield


@contextlib.contextmanager
def final_stops() -> Iterator[None]:
    """Keep a stopped execution stopped, as Step Functions does.

    moto's ``StopExecution`` marks the program stopped while its worker thread may still be
    inside a task; when that task then fails or times out, its ending overwrote the stop, and
    the execution ended ``FAILED`` instead of ``ABORTED``. The cleanup of aborted executions
    is tested on that status, so it must not depend on which thread wins.
    """
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    def unless_stopped(original: Callable[..., Any]) -> Callable[..., Any]:
        def end(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self._state_mutex:
                if isinstance(self._program_state, ProgramStopped):
                    return None
                return original(self, *args, **kwargs)

        return end

    with replaced({target: unless_stopped(target.current()) for target in EXECUTION_ENDINGS}):
        yield


@contextlib.contextmanager
def runtime_causes() -> Iterator[None]:
    """Say which exception a ``States.Runtime`` error was.

    moto turns any exception inside a task that is not a Step Functions failure into
    ``States.Runtime`` with ``str(exception)`` as its cause, and logs only that it happened:
    a ``KeyError`` reads ``'region'``, and the traceback is gone. Such an error is a fault
    of the local world (or of a definition), never an outcome a test should pass on, so its
    type leads the cause and its traceback goes to the log.
    """
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )

    original = FROM_ERROR.current()

    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return original(self, env, ex)
        _log.error("%s in state %r", type(ex).__name__, getattr(self, "name", "?"), exc_info=ex)
        return original(self, env, RuntimeError(f"{type(ex).__name__}: {ex}"))

    with replaced({FROM_ERROR: from_error}):
        yield
