"""The agent's CloudWatch Logs client: the same endpoint and signature as a stock client,
for a fraction of the memory a node keeps for the life of the agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config

from agent.botosession import session
from agent.main import logs_client

ROOT = Path(__file__).resolve().parents[3]
REGIONS = ["us-east-1", "eu-central-2", "cn-north-1", "us-gov-west-1", "us-iso-east-1"]


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


class _Captured(Exception):
    pass


def _where(client: Any) -> tuple[str, str]:
    """(URL, credential scope) of the PutLogEvents request the client signs; nothing is
    sent."""
    seen: list[AWSPreparedRequest] = []

    def capture(request: AWSPreparedRequest, **_: Any) -> None:
        seen.append(request)
        raise _Captured

    client.meta.events.register("before-send.logs.PutLogEvents", capture)
    with pytest.raises(_Captured):
        client.put_log_events(
            logGroupName="g", logStreamName="s", logEvents=[{"timestamp": 0, "message": "m"}]
        )
    authorization = str(seen[0].headers["Authorization"])
    scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/", 2)[2]
    return str(seen[0].url), scope


@pytest.mark.parametrize("region", REGIONS)
def test_endpoint_and_signature_are_botocores(region: str) -> None:
    stock = botocore.session.Session().create_client("logs", region_name=region)
    assert _where(logs_client(region, None)) == _where(stock)


@pytest.mark.parametrize("region", ["us-east-1", "us-gov-west-1"])
@pytest.mark.parametrize("variant", ["use_fips_endpoint", "use_dualstack_endpoint"])
def test_fips_and_dual_stack_are_botocores(region: str, variant: str) -> None:
    """As set for a node by AWS_USE_FIPS_ENDPOINT or the config file."""
    config = Config(**{variant: True})
    stock = botocore.session.Session().create_client("logs", region_name=region, config=config)
    ours = session().create_client("logs", region_name=region, config=config)
    assert _where(ours) == _where(stock)


def test_a_given_endpoint_is_used_as_it_is() -> None:
    client = logs_client("us-west-2", "http://127.0.0.1:5000")
    assert _where(client) == ("http://127.0.0.1:5000/", "us-west-2/logs/aws4_request")


MEASURE = """
import gc, json, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
import botocore.session, botocore.config, botocore.client
from agent.main import logs_client
before = rss()
client = logs_client("us-east-1", None)
gc.collect()
print(json.dumps({"client_mb": rss() - before, "boto3": "boto3" in sys.modules}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_client_costs_the_node_little_memory() -> None:
    """Built in a fresh interpreter, as on a node: the stock session (boto3, the endpoint
    table of every service) costs about 12 MB more than the imports; the agent's about 3."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    measured = json.loads(out.stdout)
    assert not measured["boto3"], "the agent imports boto3 to build its client"
    assert measured["client_mb"] < 6, f"building the client took {measured['client_mb']:.1f} MB"
