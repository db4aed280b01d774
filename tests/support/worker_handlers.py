"""Handlers the Lambda worker processes' tests invoke (``tests/unit/world/aws/
test_lambdaworkers.py``): each shows one thing a worker must carry back or survive."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RENDEZVOUS_SECONDS = 60.0


def function(
    handler: str, name: str = "nodemedic-test", timeout: int = 60, **variables: str
) -> Any:
    """A function whose handler is ``handler`` of this module, or the ``module.function``
    it names: the attributes of moto's LambdaFunction that an invocation reads."""
    return SimpleNamespace(
        function_name=name,
        version="$LATEST",
        function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        memory_size=256,
        timeout=timeout,
        region="us-east-1",
        handler=handler if "." in handler else f"{__name__}.{handler}",
        environment_vars=variables,
    )


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """What the function saw: its event, its variable, its name, its process."""
    print('{"printed": "to the log group"}')
    logging.getLogger("worker-test").warning("logged to the log group")
    return {
        "event": event,
        "setting": os.environ.get("SETTING"),
        "function": context.function_name,
        "pid": os.getpid(),
    }


def meet(event: dict[str, Any], context: Any) -> int:
    """Leave a mark, then wait for ``event["expected"]`` marks: only invocations that run
    at the same time all return; one at a time, the first waits in vain and fails."""
    folder = Path(event["folder"])
    (folder / context.aws_request_id).touch()
    deadline = time.monotonic() + RENDEZVOUS_SECONDS
    while len(list(folder.iterdir())) < event["expected"]:
        if time.monotonic() > deadline:
            raise TimeoutError("the other invocations never ran beside this one")
        time.sleep(0.05)
    return os.getpid()


def fail(event: dict[str, Any], context: Any) -> None:
    raise ValueError(event["why"])


def die(event: dict[str, Any], context: Any) -> None:
    os._exit(3)


def linger(event: dict[str, Any], context: Any) -> int:
    """Take ``event["seconds"]``, however long the function may run."""
    time.sleep(event["seconds"])
    return os.getpid()


def time_left(event: dict[str, Any], context: Any) -> int:
    """Take ``event["seconds"]``, then tell the time the context says is left."""
    time.sleep(event["seconds"])
    return int(context.get_remaining_time_in_millis())
