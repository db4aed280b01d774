"""AWS for the local world: a moto server on loopback, in this process.

In this process so that the Lambda handlers run in it when moto invokes a function
(``inprocess.py``), or in worker processes it starts (``lambdaworkers.py``); with the
world's changes to moto in place while it runs (every one is named in ``motopatch.py``):
handlers in-process or in workers, DynamoDB's atomic conditional writes, a state machine's
definition parsed once, CloudWatch's metrics from Embedded Metric Format log lines and its
percentiles. Step Functions executes state machines, and sends their AWS
calls back to this server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import urllib.request
from collections.abc import Iterator
from typing import Any
from unittest import mock

from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from world.aws.cloudwatch import metrics_from_logs, metrics_listed_once, percentile_statistics
from world.aws.groups import instances_left_out
from world.aws.inprocess import handlers_in_process
from world.aws.instances import distinct_private_ips
from world.aws.lambdaworkers import handlers_in_processes
from world.aws.motopatch import BACKEND_FOR_HOST, atomic_writes, replaced
from world.aws.motoservices import lambda_targets
from world.aws.quotas import AwsLimits, aws_limits
from world.aws.stack import QUICK_EC2
from world.aws.stepfunctions import (
    clients_made_once,
    definitions_parsed_once,
    final_stops,
    paths_parsed_once,
    runtime_causes,
    start_executions,
)
from world.aws.transactions import item_rollbacks

REGION = "us-east-1"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
"""What the local world's AWS clients (in this process and the agents') present to moto."""


@contextlib.contextmanager
def moto_server(
    *, lambda_processes: bool = False, limits: AwsLimits | None = None
) -> Iterator[str]:
    """moto as a server on loopback, in this process; its endpoint URL. ``lambda_processes``:
    Lambda handlers run in warm worker processes (``lambdaworkers``), many at once, not in
    this process one at a time (``inprocess``). ``limits``: AWS's throttle of
    ``StartExecution`` and retries of failed subscription deliveries (``quotas``), AWS's
    own where None."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, {**CREDENTIALS, **QUICK_EC2}))
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        stack.callback(server.stop)
        host, port = server.get_host_and_port()
        # One line per request on stderr otherwise.
        requests_log = logging.getLogger("werkzeug")
        stack.callback(requests_log.setLevel, requests_log.level)
        requests_log.setLevel(logging.WARNING)
        endpoint = f"http://{host}:{port}"
        # MOTO_PORT: where Step Functions sends the state machine's own AWS calls.
        # AWS_ENDPOINT_URL: where the handlers running in this process send theirs.
        stack.enter_context(
            mock.patch.dict(os.environ, {"MOTO_PORT": str(port), "AWS_ENDPOINT_URL": endpoint})
        )
        _moto_api(endpoint, "reset")
        _moto_api(endpoint, "config", {"stepfunctions": {"execute_state_machine": True}})
        stack.enter_context(handlers_in_processes() if lambda_processes else handlers_in_process())
        # Undone first on the way out, while the handlers still run: an execution still
        # going (a storm's, held by the breaker) takes no new Lambda task to moto's Docker.
        stack.callback(
            _moto_api, endpoint, "config", {"stepfunctions": {"execute_state_machine": False}}
        )
        stack.enter_context(atomic_writes())
        stack.enter_context(item_rollbacks())
        stack.enter_context(final_stops())
        stack.enter_context(runtime_causes())
        stack.enter_context(start_executions())
        stack.enter_context(lambda_targets())
        stack.enter_context(aws_limits(limits or AwsLimits()))
        stack.enter_context(definitions_parsed_once())
        stack.enter_context(paths_parsed_once())
        stack.enter_context(clients_made_once())
        stack.enter_context(metrics_from_logs())
        stack.enter_context(percentile_statistics())
        stack.enter_context(metrics_listed_once())
        stack.enter_context(backends_remembered())
        stack.enter_context(distinct_private_ips())
        stack.enter_context(instances_left_out())
        yield endpoint


@contextlib.contextmanager
def backends_remembered() -> Iterator[None]:
    """moto's server finds each request's backend while it holds one lock for every
    request, and lists moto's package folder on disk to do it (some 200 ``stat`` calls,
    0.6 ms idle): with many threads waiting on the interpreter, each call gives it up, and
    the requests of a 150-node storm queued there longest of any place in the world. A
    host's backend never changes, so each host's is found once."""
    original = BACKEND_FOR_HOST.current()
    found: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        if host not in found:  # under moto's lock, as the call is
            found[host] = original(self, host)
        return found[host]

    with replaced({BACKEND_FOR_HOST: get_backend_for_host}):
        yield


MOTO_API_SECONDS = 300
"""How long moto's own API may take to answer: a second when idle, minutes after a storm of
1,500 nodes while its executions still run."""


def _moto_api(endpoint: str, path: str, body: dict[str, Any] | None = None) -> None:
    """moto's own API: ``reset`` empties every backend (the previous world's, too),
    ``config`` sets what ``mock_aws(config=...)`` sets in-process."""
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        f"{endpoint}/moto-api/{path}",
        data=json.dumps(body or {}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=MOTO_API_SECONDS):  # noqa: S310
        pass
