"""The agent's heartbeat and its liveness probe: ``/livez`` fails when a loop is stuck, not
when the kernel log is idle or CloudWatch Logs is away."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent.main
from agent.checkpoint import Checkpoint
from agent.config import Config
from agent.kmsg import Line, Reader
from nodemedic.contracts.logs import kmsg_stream, parse_heartbeat
from tests.support.agent import Outage, Running, append_lines, config, free_port, messages, wait_for


def probe(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def _quick(tmp_path: Path, endpoint: str, instance_id: str, port: int) -> Config:
    return config(
        tmp_path, endpoint, instance_id, metrics_port=port, stall_grace=0.5, check_interval=0.2
    )


def test_heartbeats_ship_every_interval_with_the_agents_state(
    tmp_path: Path,
    moto_url: str,
    logs: Any,
    instance_id: str,
    run_agent: Callable[[Config], Running],
) -> None:
    run_agent(config(tmp_path, moto_url, instance_id, heartbeat_interval=0.5))
    stream = kmsg_stream(instance_id)

    def beats() -> list[dict[str, int]]:
        return [b for b in map(parse_heartbeat, messages(logs, stream)) if b is not None]

    wait_for(lambda: len(beats()) >= 3, "three heartbeats of an idle node")
    assert beats()[0]["interval"] == 1 and beats()[0]["credential_failures"] == 0
    assert {"spool_bytes", "put_failures", "lines_read"} <= set(beats()[0])


def test_live_while_kmsg_is_idle_and_while_cloudwatch_is_away(
    tmp_path: Path, outage: Outage, instance_id: str, run_agent: Callable[[Config], Running]
) -> None:
    port = free_port()
    running = run_agent(_quick(tmp_path, outage.url, instance_id, port))
    outage.stop()
    append_lines(tmp_path / "kmsg", ["a line that cannot ship"])
    wait_for(lambda: running.agent.metrics.put_failures >= 3, "shipping to fail")
    for _ in range(10):  # 2 s: several times every loop's allowance
        assert probe(port) == (200, "ok\n")
        threading.Event().wait(0.2)


class _Hung:
    """A kernel log read that never returns: the collector is stuck."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def read(self, timeout: float) -> list[Line]:
        self.released.wait()
        return []

    def close(self) -> None:
        self.released.set()


def test_a_stuck_collector_fails_the_probe_and_names_it(
    tmp_path: Path,
    moto_url: str,
    instance_id: str,
    run_agent: Callable[[Config], Running],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hung = _Hung()

    def open_reader(path: str, start: Checkpoint) -> Reader:
        return hung

    monkeypatch.setattr(agent.main, "open_reader", open_reader)
    port = free_port()
    running = run_agent(_quick(tmp_path, moto_url, instance_id, port))
    try:
        wait_for(lambda: probe(port)[0] == 503, "the probe to fail")
        assert probe(port) == (503, "stalled: collector\n")
        assert 'nodemedic_agent_loop_age_seconds{loop="shipper"} 0' in (
            running.agent.metrics.render()
        )
    finally:
        hung.released.set()
