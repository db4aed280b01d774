"""``World.instance_state``: a scenario's verdict reads EC2, and a read moto's server
answered with its HTTP 500 page is asked again instead of failing the scenario.
``World.aws``: each service's client is made once, however many threads ask at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.parsers import ResponseParserError

from world.world import STATE_READS, World

RUNNING = {"Reservations": [{"Instances": [{"State": {"Name": "running"}}]}]}


class FlakyEc2:
    """moto's EC2 as a busy server answered it: ``failures`` 500 pages, then the instance."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def describe_instances(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.failures:
            raise ResponseParserError("Unable to parse response, invalid XML received: 500")
        return RUNNING


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("world.world.time.sleep", lambda _: None)


def _state(ec2: FlakyEc2) -> str:
    return World.instance_state(SimpleNamespace(aws=lambda _: ec2), "i-0a")  # type: ignore[arg-type]


def test_a_500_page_from_moto_is_read_again() -> None:
    ec2 = FlakyEc2(failures=STATE_READS - 1)
    assert _state(ec2) == "running"
    assert ec2.calls == STATE_READS


def test_a_server_that_keeps_failing_still_fails_the_read() -> None:
    ec2 = FlakyEc2(failures=STATE_READS)
    with pytest.raises(ResponseParserError):
        _state(ec2)
    assert ec2.calls == STATE_READS


def test_each_services_client_is_made_once_however_many_threads_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every replaced instance asked for an EC2 client; made anew, each loaded the model."""
    made: list[str] = []

    def client(service: str, **_: Any) -> object:
        made.append(service)
        time.sleep(0.05)  # a client takes a while to make: the threads overlap in it
        return object()

    monkeypatch.setattr("world.world.boto3.client", client)
    world = SimpleNamespace(endpoint="http://x", _clients={}, _clients_lock=threading.Lock())
    with ThreadPoolExecutor(8) as pool:
        ec2 = list(pool.map(lambda _: World.aws(world, "ec2"), range(8)))  # type: ignore[arg-type]
    logs = World.aws(world, "logs")  # type: ignore[arg-type]
    assert made == ["ec2", "logs"]
    assert all(c is ec2[0] for c in ec2) and logs is not ec2[0]
