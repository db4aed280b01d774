"""Shared pieces of the agent tests: a moto server as CloudWatch Logs (one for the session,
and one per test that can be stopped and started again), and helpers to run the agent
in-process or as a process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moto.server import ThreadedMotoServer

from agent.config import Config
from agent.main import Agent
from nodemedic.contracts.logs import node_log_group
from tests.support.paths import ROOT

REGION = "us-east-1"
CLUSTER = "demo"
GROUP = node_log_group(CLUSTER)
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Outage:
    """A moto server of its own on a fixed loopback port: ``stop()`` makes CloudWatch Logs
    unreachable (connections are refused), ``start()`` serves the same port again. The
    data lives in the test process, so it outlasts a stop as it would in AWS."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: ThreadedMotoServer | None = None

    def start(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


_instances = iter(range(1, 1_000_000))


def messages(client: Any, stream: str, group: str = GROUP) -> list[str]:
    """Every message of a stream, oldest first, through GetLogEvents."""
    try:
        found: list[str] = []
        token = None
        while True:
            kwargs: dict[str, str] = {"nextToken": token} if token else {}
            page = client.get_log_events(
                logGroupName=group, logStreamName=stream, startFromHead=True, limit=10_000, **kwargs
            )
            found += [e["message"] for e in page["events"]]
            if not page["events"] or page["nextForwardToken"] == token:
                return found
            token = page["nextForwardToken"]
    except client.exceptions.ResourceNotFoundException:
        return []


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Until ``predicate()`` holds: the agent ships within a second on an idle machine and
    within tens of seconds on a busy one, so the timeout only bounds a broken run."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def config(tmp_path: Path, endpoint: str, instance_id: str, **overrides: Any) -> Config:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    base: dict[str, Any] = {
        "cluster": CLUSTER,
        "instance_id": instance_id,
        "region": REGION,
        "boot_id": "11111111-2222-3333-4444-555555555555",
        "state_dir": tmp_path / "state",
        "kmsg": str(kmsg),
        "pstore_dir": tmp_path / "pstore",
        "endpoint_url": endpoint,
        "create_log_group": True,
        "flush_interval": 0.2,
        "checks": (),
        "retry_base_delay": 0.05,
        "retry_max_delay": 0.5,
        "shutdown_grace": 2.0,
        "sign": False,
    }
    base.update(overrides)
    return Config(**base)


class Running:
    """An agent running in a thread of the test process."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.stop = threading.Event()
        self.thread = threading.Thread(target=agent.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "agent did not stop"


def agent_process(args: list[str]) -> subprocess.Popen[bytes]:
    """``python -m agent ...`` as its own process (what SIGKILL and RSS tests need)."""
    env = {**os.environ, **AWS_ENV, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "agent", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def append_lines(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))
