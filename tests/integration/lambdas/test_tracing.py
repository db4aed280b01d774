"""The functions run with active X-Ray tracing; the handlers must really send their segments.

A handler is run in a child process that looks like a Lambda container (``LAMBDA_TASK_ROOT``
and a trace header set), with the X-Ray daemon address pointing at a UDP socket on
loopback: what the SDK emits there is what the X-Ray daemon would forward.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from tests.support.paths import ROOT
from tests.support.payloads import decoded, wrap

_RUN = """
import json, sys
from tests.support.lambda_context import lambda_context
from lambdas.classify.handler import handler
context = lambda_context("classify", memory_mb=256, timeout_seconds=60)
print(json.dumps(handler(json.loads(sys.argv[1]), context)))
"""


def test_the_classify_handler_sends_its_segment_to_xray() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon:
        daemon.bind(("127.0.0.1", 0))
        daemon.settimeout(10)
        port = daemon.getsockname()[1]
        environment = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "LAMBDA_TASK_ROOT": str(ROOT),
            "AWS_LAMBDA_FUNCTION_NAME": "classify",
            "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;"
            "Sampled=1",
            "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{port}",
            "AWS_DEFAULT_REGION": "us-east-1",
            "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:x",
            "IDEMPOTENCY_TABLE": "idempotency",
        }
        event = json.dumps(wrap(decoded("control-message.json")))
        result = subprocess.run(
            [sys.executable, "-c", _RUN, event],
            env=environment,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout.splitlines()[-1]) == {"lines": 0}
        header, _, body = daemon.recv(65536).decode().partition("\n")
    assert json.loads(header) == {"format": "json", "version": 1}
    segment = json.loads(body)
    assert segment["name"] == "## handler"
    assert segment["trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert segment["annotations"]["ColdStart"] is True
