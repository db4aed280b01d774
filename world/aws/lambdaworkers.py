"""Run Lambda handlers in warm worker processes, a few per function, when moto invokes a
function: the runner of the world that many nodes fail in at once (``bench/scale.py``).

The in-process runner (``inprocess``) runs one invocation at a time, because Powertools
keeps its log keys and metrics in module-level state: at 1,500 nodes every subscription
delivery waited behind every Step Functions task ahead of it. Here each function has up
to ``WORKERS_PER_FUNCTION`` processes (``lambdaworker``), started when an invocation finds
none idle and kept warm for the next, as Lambda keeps a function's containers: invocations
of one function run side by side up to that many, and different functions never wait on
each other. A worker sees the world's environment at the time of the call with the
function's own variables on top, and makes its AWS calls to the moto server by
``AWS_ENDPOINT_URL``, as the in-process handlers do.

What the in-process runner allows and this one does not: a test replacing a handler's
function in its own process. The tests that do so use the in-process runner.

Public interface: ``handlers_in_processes()`` (context manager), ``LambdaWorkers``,
``Called``, ``WORKERS_PER_FUNCTION``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import os
import select
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from world.aws import motopatch
from world.aws.lambdacall import context_of, error_body, variables_of

WORKERS_PER_FUNCTION: Final = 4
"""Concurrent invocations of one function: enough that a burst's deliveries do not queue
behind the Step Functions tasks of the same function, few enough for two cores."""
ROOT: Final = Path(__file__).resolve().parents[2]
WORKER_START_SECONDS: Final = 300.0
"""How long a new worker may take to import its handler before it is taken for dead: Lambda
times its init phase apart from the function's timeout, and a busy machine takes seconds to
import boto3 and Powertools."""
WORKER_EXIT_SECONDS: Final = 30.0
"""How long a worker told to stop may finish the invocation it is running."""
TIMED_OUT_ERROR: Final = "Sandbox.Timedout"
"""The error type of an invocation that ran past its function's timeout, as Lambda answers
it (Lambda's troubleshooting guide, "Invocation timeouts"); Step Functions matches it."""


class TimedOut(enum.Enum):
    TIMED_OUT = "timed out"


TIMED_OUT: Final = TimedOut.TIMED_OUT


@dataclass(frozen=True)
class Called:
    """One invocation's outcome, as the worker reports it."""

    body: str
    is_error: bool
    logged: str
    printed: str
    seconds: float


class Worker:
    """One worker process and its pipes; used by one invocation at a time."""

    def __init__(self, handler: str, environment: dict[str, str]) -> None:
        """Start it and wait until it has imported ``handler`` (its init phase); one that
        does not say so in time is killed, and its first call answers that it is gone."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "world.aws.lambdaworker", handler],
            cwd=ROOT,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        stdout = self.process.stdout
        if stdout is None or not select.select([stdout], [], [], WORKER_START_SECONDS)[0]:
            self.process.kill()
        elif not stdout.readline():
            self.process.wait()

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | TimedOut | None:
        """The worker's reply; None when it is gone (it exited or was killed); ``TIMED_OUT``
        when none came within ``timeout`` seconds, and then the worker is killed, as Lambda
        ends an invocation that runs past its function's timeout."""
        stdin, stdout = self.process.stdin, self.process.stdout
        if stdin is None or stdout is None:
            raise RuntimeError("a worker is started with both pipes")
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            # One reply a request, read whole: nothing is left buffered to hide from select.
            if not select.select([stdout], [], [], timeout)[0]:
                self.process.kill()
                self.process.wait()
                return TIMED_OUT
            reply: dict[str, Any] = json.loads(stdout.readline())
        except (OSError, ValueError):  # a broken pipe, or no whole reply: it is gone
            self.process.kill()
            return None
        return reply

    def stop(self) -> None:
        """Let it end the invocation it may be running, then end it."""
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=WORKER_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class LambdaWorkers:
    """Every function's workers, started on demand and stopped by ``close``."""

    def __init__(self, per_function: int = WORKERS_PER_FUNCTION) -> None:
        self.per_function = per_function
        self._idle: defaultdict[str, list[Worker]] = defaultdict(list)
        self._started: Counter[str] = Counter()
        self._every: list[Worker] = []
        self._changed = threading.Condition()
        self._closed = False

    def invoke(self, function: Any, event: Any) -> tuple[str, bool, str]:
        """moto's invocation of ``function``: the body, whether it is an error, the logs."""
        called = self.call(function, event)
        return called.body, called.is_error, called.logged + called.printed

    def call(self, function: Any, event: Any) -> Called:
        """Run ``function``'s handler on ``event`` in one of its workers; a worker that
        dies in the call is Lambda's ``Runtime.ExitError`` and is not used again."""
        request = {
            "handler": function.handler,
            "event": event.decode() if isinstance(event, bytes) else event,
            "environment": {**os.environ, **variables_of(function)},
        }
        name = function.function_name
        timeout = float(function.timeout)
        worker = self._take(name, function.handler, request["environment"])
        # The timeout runs from here, the worker's init phase behind it, as Lambda times it.
        request["context"] = dataclasses.asdict(context_of(function))
        reply = worker.call(request, timeout)
        self._give_back(name, worker, alive=isinstance(reply, dict))
        if reply is TIMED_OUT:
            at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            request_id = request["context"]["aws_request_id"]
            said = f"{at}Z {request_id} Task timed out after {timeout:.2f} seconds"
            return Called(error_body(TIMED_OUT_ERROR, said), True, "", "", timeout)
        if not isinstance(reply, dict):
            body = error_body("Runtime.ExitError", f"{name}'s worker process exited")
            return Called(body, True, "", "", 0.0)
        return Called(**reply)

    def close(self) -> None:
        """Stop every worker; an invocation still running ends first."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            workers, self._every = self._every, []
        for worker in workers:
            worker.stop()

    def _take(self, name: str, handler: str, environment: dict[str, str]) -> Worker:
        with self._changed:
            while not self._idle[name] and self._started[name] >= self.per_function:
                if self._closed:
                    raise RuntimeError("the world's Lambda workers are stopped")
                self._changed.wait()
            if self._closed:
                raise RuntimeError("the world's Lambda workers are stopped")
            if self._idle[name]:
                return self._idle[name].pop()
            self._started[name] += 1
        try:
            worker = Worker(handler, environment)  # outside the lock: a start takes a while
        except BaseException:
            self._give_back(name, None, alive=False)
            raise
        with self._changed:
            self._every.append(worker)
        return worker

    def _give_back(self, name: str, worker: Worker | None, *, alive: bool) -> None:
        with self._changed:
            if alive and worker is not None:
                self._idle[name].append(worker)
            else:
                self._started[name] -= 1
            self._changed.notify_all()


@contextlib.contextmanager
def handlers_in_processes() -> Iterator[LambdaWorkers]:
    """While active, every moto Lambda invocation runs its handler in a worker process."""
    workers = LambdaWorkers()
    try:
        with motopatch.lambda_invocations(workers.invoke):
            yield workers
    finally:
        workers.close()
