"""``nodemedic backtest --log-group``: a cluster's node log group, as the agents wrote it,
read back from CloudWatch Logs (moto) and replayed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from console.cli import main
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.contracts.logs import health_stream, identity_stream, kmsg_stream, node_log_group
from tests.support.backtest import benign_lines, fault_line, node

GROUP = node_log_group("prod")
HOUR_MS = 3600 * 1000
MINUTE_MS = 60 * 1000


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("logs")
        client.create_log_group(logGroupName=GROUP)
        yield client


@pytest.fixture
def now_ms() -> int:
    """Half an hour before the test starts, on the minute: moto takes every event in now,
    and a line heard more than ``stale_after`` (an hour) after it was logged is replayed as
    stale, as the classifier would judge a late delivery. Taken when the test starts, not
    when the module is imported: on a busy machine a suite may come to this module's tests
    over an hour after it imported them."""
    return (int(time.time() * 1000) // MINUTE_MS - 30) * MINUTE_MS


def ship(logs: Any, stream: str, events: list[tuple[int, str]], now_ms: int) -> None:
    """What an agent's shipper does: one stream per node and source, events in order."""
    logs.create_log_stream(logGroupName=GROUP, logStreamName=stream)
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName=stream,
        logEvents=[{"timestamp": now_ms + at, "message": text} for at, text in events],
    )


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def backtest(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtest", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_log_group_is_replayed_node_by_node(
    logs: Any, capsys: pytest.CaptureFixture[str], now_ms: int
) -> None:
    chatter = [(i * 1000, line) for i, line in enumerate(benign_lines()[:30])]
    ship(logs, kmsg_stream(node(1)), [*chatter, (60_000, fault_line("nvidia-xid-79"))], now_ms)
    ship(logs, kmsg_stream(node(2)), [*chatter, (90_000, fault_line("nvidia-xid-48"))], now_ms)
    ship(logs, kmsg_stream(node(3)), chatter, now_ms)
    health = {"check": NVIDIA_SMI_CHECK, "device": "node", "status": "ok", "reason": "Healthy"}
    ship(logs, health_stream(node(3)), [(5_000, json.dumps(health | {"figures": {}}))], now_ms)
    ship(logs, identity_stream(node(1)), [(1_000, "registration, never classified")], now_ms)
    # Outside --start/--end: read by nobody.
    ship(logs, kmsg_stream(node(4)), [(-HOUR_MS, fault_line("nvidia-xid-79"))], now_ms)

    code, out, err = backtest(
        capsys,
        "--log-group", GROUP,
        "--start", iso(now_ms),
        "--end", iso(now_ms + HOUR_MS),
        "--enforce",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    rows = {row["node"]: row for row in doc["rows"]}
    assert set(rows) == {node(1), node(2)}
    assert (rows[node(1)]["action"], rows[node(1)]["first_line"]) == (
        "replace",
        iso(now_ms + 60_000),
    )
    assert rows[node(2)]["action"] == "reboot"
    totals = doc["totals"]
    assert (totals["nodes"], totals["replaced"], totals["rebooted"]) == (3, 1, 1)
    assert totals["lines"] == 3 * 30 + 2 + 1


def test_an_unknown_log_group_is_exit_2(
    logs: Any, capsys: pytest.CaptureFixture[str], now_ms: int
) -> None:
    code, out, err = backtest(
        capsys,
        "--log-group",
        "/nodemedic/nope/nodes",
        "--start",
        iso(now_ms),
        "--end",
        iso(now_ms + 1),
    )
    assert code == 2
    assert out == ""
    assert "/nodemedic/nope/nodes" in err


def test_a_log_group_needs_its_time_range(
    logs: Any, capsys: pytest.CaptureFixture[str], now_ms: int
) -> None:
    code, _, err = backtest(capsys, "--log-group", GROUP, "--start", iso(now_ms))
    assert code == 2
    assert "--start and --end" in err
