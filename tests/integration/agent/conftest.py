"""Shared pieces of the agent tests: a moto server as CloudWatch Logs (one for the session,
and one per test that can be stopped and started again), and helpers to run the agent
in-process or as a process."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from agent.config import Config
from agent.main import Agent
from tests.support.agent import AWS_ENV, REGION, Outage, Running, _instances


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    os.environ.update(AWS_ENV)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def outage() -> Iterator[Outage]:
    os.environ.update(AWS_ENV)
    server = Outage()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def logs(moto_url: str) -> Any:
    return boto3.client("logs", endpoint_url=moto_url, region_name=REGION)


@pytest.fixture
def instance_id() -> str:
    """A fresh instance id per test, so streams never mix between tests."""
    return f"i-{next(_instances):017x}"


@pytest.fixture
def run_agent() -> Iterator[Callable[[Config], Running]]:
    started: list[Running] = []

    def start(cfg: Config) -> Running:
        running = Running(Agent(cfg))
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.close()
