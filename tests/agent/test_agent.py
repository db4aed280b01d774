"""The whole agent against a CloudWatch Logs server (moto): every line arrives, in order,
once, through outages, restarts, SIGKILL and bursts."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agent.batch import MAX_MESSAGE_BYTES, utf8_size
from agent.main import health_stream, kmsg_stream
from tests.agent.conftest import (
    CLUSTER,
    EVENTS,
    REGION,
    Proxy,
    agent_process,
    append_lines,
    config,
    messages,
    wait_for,
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def numbered(start: int, stop: int, prefix: str = "line") -> list[str]:
    return [f"{prefix} {n:06d}" for n in range(start, stop)]


def test_lines_and_health_results_arrive_in_order(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    port = free_port()
    cfg = config(
        tmp_path,
        moto_url,
        instance_id,
        checks=("nvidia",),
        nvidia_smi=f"cat {EVENTS / 'nvidia-smi' / 'tesla-v100-dbe-retirement-pending.xml'}",
        metrics_port=port,
    )
    kmsg = Path(cfg.kmsg)
    recorded = (EVENTS / "kmsg" / "kmsg-records.txt").read_bytes()
    kmsg.write_bytes(recorded)
    running = run_agent(cfg)
    append_lines(kmsg, numbered(0, 50))
    expected_kmsg = sum(1 for line in recorded.splitlines() if line[:1].isdigit()) + 50
    wait_for(
        lambda: len(messages(logs, kmsg_stream(instance_id))) == expected_kmsg, 15, "kernel lines"
    )
    shipped = messages(logs, kmsg_stream(instance_id))
    assert shipped[0] == "nvidia: loading out-of-tree module taints kernel."
    assert shipped[-50:] == numbered(0, 50)
    health = [json.loads(m) for m in messages(logs, health_stream(instance_id))]
    assert [(h["check"], h["reason"]) for h in health] == [
        ("nvidia-smi", "EccUncorrectable"),
        ("nvidia-smi", "RetiredPagesPending"),
    ]
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    assert f"nodemedic_agent_lines_read_total {expected_kmsg}" in scrape
    assert f'events_shipped_total{{stream="{kmsg_stream(instance_id)}"}} {expected_kmsg}' in scrape
    assert 'nodemedic_agent_check_status{check="nvidia-smi",status="fail"} 1' in scrape
    running.close()


def test_aws_away_then_back_loses_nothing(
    tmp_path: Path, proxy: Proxy, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, proxy.url, instance_id)
    kmsg = Path(cfg.kmsg)
    running = run_agent(cfg)
    append_lines(kmsg, numbered(0, 100))
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) == 100, 15, "lines before the outage")
    proxy.down()
    for chunk in range(5):
        append_lines(kmsg, numbered(100 + chunk * 100, 200 + chunk * 100))
        time.sleep(0.4)
    wait_for(lambda: running.agent.metrics.events_spooled >= 500, 15, "the outage to be spooled")
    assert len(messages(logs, stream)) == 100, "nothing reached the service while it was away"
    proxy.up()
    append_lines(kmsg, numbered(600, 700))
    wait_for(lambda: len(messages(logs, stream)) >= 700, 30, "the spool to drain")
    time.sleep(1.0)
    assert messages(logs, stream) == numbered(0, 700)
    assert running.agent.metrics.put_failures > 0
    running.close()
    assert not list((tmp_path / "state" / "spool").glob("*.batch"))


def test_invalid_utf8_and_2mb_lines_are_shipped_safely(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, moto_url, instance_id)
    kmsg = Path(cfg.kmsg)
    running = run_agent(cfg)
    with kmsg.open("ab") as handle:
        handle.write(b"NVRM: bad bytes \xff\xfe\x80 end\n")
        handle.write(b"z" * (2 * 1024 * 1024) + b"\n")
        handle.write("ok after: café\n".encode())
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) == 3, 15, "the three lines")
    bad, huge, after = messages(logs, stream)
    assert bad == "NVRM: bad bytes \\xff\\xfe\\x80 end"
    assert huge.startswith("z" * 100_000) and "[nodemedic: truncated, 2097152 bytes" in huge
    assert utf8_size(huge) <= MAX_MESSAGE_BYTES
    assert after == "ok after: café"
    running.close()


def test_a_new_boot_reads_the_buffer_from_the_start(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, moto_url, instance_id)
    append_lines(Path(cfg.kmsg), numbered(0, 10))
    stream = kmsg_stream(instance_id)
    first = run_agent(cfg)
    wait_for(lambda: len(messages(logs, stream)) == 10, 15, "first boot")
    first.close()
    same_boot = run_agent(cfg)
    append_lines(Path(cfg.kmsg), numbered(10, 12))
    wait_for(lambda: len(messages(logs, stream)) == 12, 15, "resumed after the checkpoint")
    same_boot.close()
    cfg.boot_id = "22222222-2222-3333-4444-555555555555"
    run_agent(cfg)
    wait_for(lambda: len(messages(logs, stream)) == 24, 15, "the new boot's buffer")
    assert messages(logs, stream) == numbered(0, 12) * 2


def cli_args(tmp_path: Path, endpoint: str, instance_id: str, *extra: str) -> list[str]:
    return [
        "--cluster", CLUSTER, "--instance-id", instance_id, "--region", REGION,
        "--endpoint-url", endpoint, "--create-log-group", "--boot-id", "b-1",
        "--kmsg", str(tmp_path / "kmsg"), "--state-dir", str(tmp_path / "state"),
        "--checks", "", "--metrics-port", "0", "--flush-interval", "0.2",
        "--retry-base-delay", "0.05", "--retry-max-delay", "0.5", *extra,
    ]  # fmt: skip


def test_sigterm_ships_what_it_can_and_a_restart_repeats_nothing(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    kmsg = tmp_path / "kmsg"
    append_lines(kmsg, numbered(0, 2000))
    process = agent_process(cli_args(tmp_path, moto_url, instance_id))
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0, process.stderr.read() if process.stderr else ""
    checkpoint = json.loads((tmp_path / "state" / "checkpoint.json").read_text())
    assert checkpoint["boot_id"] == "b-1" and checkpoint["seq"] > 0
    process = agent_process(cli_args(tmp_path, moto_url, instance_id))
    append_lines(kmsg, numbered(2000, 2100))
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) >= 2100, 30, "all lines")
    time.sleep(1.0)
    process.terminate()
    process.wait(timeout=20)
    assert messages(logs, stream) == numbered(0, 2100)


def test_sigkill_and_restart_lose_nothing_and_repeat_at_most_one_batch(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    args = cli_args(tmp_path, moto_url, instance_id, "--max-batch-events", "100")
    stream = kmsg_stream(instance_id)
    process = agent_process(args)

    def write() -> None:
        for start in range(0, 6000, 200):
            append_lines(kmsg, numbered(start, start + 200))
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    wait_for(lambda: len(messages(logs, stream)) >= 1000, 30, "some lines shipped")
    process.kill()
    process.wait(timeout=10)
    at_kill = len(messages(logs, stream))
    writer.join()
    assert at_kill < 6000, "killed mid-stream"
    process = agent_process(args)
    append_lines(kmsg, numbered(6000, 7000))
    wait_for(lambda: set(messages(logs, stream)) == set(numbered(0, 7000)), 60, "every line")
    time.sleep(1.0)
    process.terminate()
    process.wait(timeout=20)
    shipped = messages(logs, stream)
    assert list(dict.fromkeys(shipped)) == numbered(0, 7000), "in order, none lost"
    repeated = len(shipped) - 7000
    assert repeated <= 100, f"{repeated} lines repeated: more than the one batch in flight"


@pytest.mark.slow
def test_a_burst_of_100k_lines_is_shipped_with_bounded_memory(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    process = agent_process(cli_args(tmp_path, moto_url, instance_id))
    time.sleep(1.0)
    burst = numbered(0, 100_000, "NVRM: burst")
    append_lines(kmsg, burst)
    stream = kmsg_stream(instance_id)
    status = Path(f"/proc/{process.pid}/status")
    wait_for(lambda: len(messages(logs, stream)) >= 100_000, 120, "the burst")
    peak_kb = next(
        int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmHWM")
    )
    process.terminate()
    process.wait(timeout=20)
    assert messages(logs, stream) == burst
    # Memory stays bounded (batches beyond two go to disk); a boto3 client alone is ~46 MB.
    assert peak_kb < 150 * 1024, f"peak RSS {peak_kb} kB"


def test_bad_arguments_are_refused_before_anything_starts(tmp_path: Path) -> None:
    process = agent_process(
        ["--instance-id", "i-1", "--region", REGION, "--kmsg", str(tmp_path / "none")]
    )
    assert process.wait(timeout=20) == 2
    assert process.stderr is not None and b"--cluster is required" in process.stderr.read()
    process = agent_process(
        [
            "--cluster",
            "c",
            "--instance-id",
            "i-1",
            "--region",
            REGION,
            "--kmsg",
            str(tmp_path / "none"),
        ]
    )
    assert process.wait(timeout=20) == 2
    assert process.stderr is not None and b"does not exist" in process.stderr.read()
