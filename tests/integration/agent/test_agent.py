"""The whole agent against a CloudWatch Logs server (moto): every line arrives, in order,
once, through outages, restarts, SIGTERM, SIGKILL and bursts; and the agent says what it
did on its /metrics endpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import threading
import time
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.logs.models import logs_backends

from agent.batch import MAX_MESSAGE_BYTES, utf8_size
from agent.inject import LOG_USER, write_device
from agent.kmsg import DevKmsgReader
from agent.main import Agent, logs_client
from agent.outbox import dropped_message
from agent.pstore import read_dumps
from nodemedic.contracts.health import EFA_CHECK, NEURON_SYSFS_CHECK, NVIDIA_SMI_CHECK
from nodemedic.contracts.logs import health_stream, kmsg_stream, shipped_message
from nodemedic.contracts.logs import node_log_group as log_group
from nodemedic.detect.classifier import classify
from tests.support.agent import (
    CLUSTER,
    REGION,
    Outage,
    Running,
    agent_process,
    append_lines,
    config,
    free_port,
    messages,
    wait_for,
)
from tests.support.paths import EVENTS

V100 = EVENTS / "nvidia-smi" / "tesla-v100-dbe-retirement-pending.xml"


def numbered(start: int, stop: int, prefix: str = "line") -> list[str]:
    return [f"{prefix} {n:06d}" for n in range(start, stop)]


def plain(lines: list[str]) -> list[str]:
    """``lines``, appended to a followed file, as the agent ships them: no record header
    says the kernel wrote them, so they are marked injected."""
    return [shipped_message(line, None) for line in lines]


def scrape(port: int) -> dict[str, float]:
    """``/metrics`` over HTTP, as ``{"name{labels}": value}``; every sample's family has
    its HELP and TYPE lines, as Prometheus requires."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    typed = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            assert name.split("{")[0] in typed, line
            samples[name] = float(value)
    return samples


def port_closed(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_lines_and_health_results_arrive_in_order(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(
        tmp_path,
        moto_url,
        instance_id,
        checks=("nvidia",),
        check_options={"nvidia_smi": f"cat {V100}"},
    )
    kmsg = Path(cfg.kmsg)
    recorded = (EVENTS / "kmsg" / "kmsg-records.txt").read_bytes()
    kmsg.write_bytes(recorded)
    running = run_agent(cfg)
    append_lines(kmsg, numbered(0, 50))
    expected_kmsg = sum(1 for line in recorded.splitlines() if line[:1].isdigit()) + 50
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) == expected_kmsg, "kernel lines")
    shipped = messages(logs, stream)
    assert shipped[0] == "nvidia: loading out-of-tree module taints kernel."
    assert shipped[-50:] == plain(numbered(0, 50))
    health = [json.loads(m) for m in messages(logs, health_stream(instance_id))]
    assert [(h["check"], h["reason"]) for h in health] == [
        (NVIDIA_SMI_CHECK, "EccUncorrectable"),
        (NVIDIA_SMI_CHECK, "RetiredPagesPending"),
    ]
    running.close()


@pytest.mark.parametrize("service_state", ["kept", "lost"])
def test_cloudwatch_away_then_back_gets_every_line_once_in_order(
    tmp_path: Path, outage: Outage, instance_id: str, run_agent: Any, service_state: str
) -> None:
    """The endpoint refuses connections for a while. Lines acknowledged before are read
    back before it goes; the lines written while it is away wait on disk and arrive after
    it returns, in order, none twice. "lost": the service comes back without the log
    group and stream (as a moto server restarted in another process would), and the
    agent creates them again."""
    cluster = f"outage-{service_state}"
    group = log_group(cluster)
    cfg = config(tmp_path, outage.url, instance_id, cluster=cluster)
    logs = boto3.client("logs", endpoint_url=outage.url, region_name=REGION)
    kmsg, stream, spool = Path(cfg.kmsg), kmsg_stream(instance_id), tmp_path / "state" / "spool"
    running = run_agent(cfg)
    append_lines(kmsg, numbered(0, 100))
    first = plain(numbered(0, 100))
    wait_for(lambda: messages(logs, stream, group) == first, "the first lines")
    outage.stop()
    for start in range(100, 600, 100):
        append_lines(kmsg, numbered(start, start + 100))
        time.sleep(0.3)
    wait_for(lambda: running.agent.metrics.events_spooled >= 500, "the outage to be spooled")
    assert list(spool.glob("*.batch")), "the lines wait on disk"
    if service_state == "lost":
        logs_backends[DEFAULT_ACCOUNT_ID][REGION].delete_log_group(group)
    outage.start()
    append_lines(kmsg, numbered(600, 700))
    expected = plain(numbered(0 if service_state == "kept" else 100, 700))
    wait_for(lambda: len(messages(logs, stream, group)) >= len(expected), "the spool to drain")
    time.sleep(0.5)  # a line sent twice would have arrived by now
    assert messages(logs, stream, group) == expected
    assert running.agent.metrics.put_failures > 0
    running.close()
    assert not list(spool.glob("*.batch"))


def test_a_full_spool_drops_the_oldest_and_metrics_tell_it_all(
    tmp_path: Path, outage: Outage, instance_id: str, run_agent: Any
) -> None:
    port = free_port()
    (tmp_path / "sys").mkdir()  # no Neuron driver, no EFA devices
    cfg = config(
        tmp_path,
        outage.url,
        instance_id,
        cluster="spool-full",
        spool_max_bytes=24 * 1024,
        max_batch_events=25,
        metrics_port=port,
        checks=("nvidia", "neuron", "efa"),
        check_options={"nvidia_smi": f"cat {V100}"},
        sys_root=tmp_path / "sys",
    )
    group, stream = log_group("spool-full"), kmsg_stream(instance_id)
    logs = boto3.client("logs", endpoint_url=outage.url, region_name=REGION)
    running = run_agent(cfg)
    wait_for(lambda: len(messages(logs, health_stream(instance_id), group)) == 4, "health results")
    outage.stop()
    lines = numbered(0, 2000, "kept or dropped")
    for start in range(0, 2000, 250):
        append_lines(Path(cfg.kmsg), lines[start : start + 250])
        time.sleep(0.1)
    wait_for(lambda: running.agent.metrics.lines_read == 2000, "every line read")
    wait_for(  # the last batch closes after the flush interval
        lambda: scrape(port)["nodemedic_agent_events_spooled_total"] >= 2000,
        "every line spooled or dropped",
    )

    seen = scrape(port)
    dropped = seen["nodemedic_agent_events_dropped_total"]
    assert seen["nodemedic_agent_lines_read_total"] == 2000
    assert 0 < dropped < 2000
    # Within its bound, give or take the one batch a send attempt may hold back from dropping.
    assert 0 < seen["nodemedic_agent_spool_bytes"] <= 24 * 1024 + 2 * 1024
    assert seen["nodemedic_agent_put_failures_total"] > 0
    assert seen["nodemedic_agent_kmsg_records_lost_total"] == 0
    shipped_health = (
        f'nodemedic_agent_events_shipped_total{{stream="{health_stream(instance_id)}"}}'
    )
    assert seen[shipped_health] == 4
    status = {k: v for k, v in seen.items() if k.startswith("nodemedic_agent_check_status") and v}
    assert status == {
        f'nodemedic_agent_check_status{{check="{EFA_CHECK}",status="skipped"}}': 1,
        f'nodemedic_agent_check_status{{check="{NEURON_SYSFS_CHECK}",status="skipped"}}': 1,
        f'nodemedic_agent_check_status{{check="{NVIDIA_SMI_CHECK}",status="fail"}}': 1,
    }

    outage.start()
    last = plain(lines[-1:])[0]
    wait_for(lambda: last in messages(logs, stream, group), "the spool to drain")
    time.sleep(0.5)
    shipped = messages(logs, stream, group)
    notes = [m for m in shipped if m.startswith("nodemedic: spool full")]
    kept = [m for m in shipped if m not in notes]
    assert sum(int(n.split()[4]) for n in notes) == dropped
    assert notes[0] == dropped_message(int(notes[0].split()[4]))
    assert len(kept) + dropped == 2000 and kept == sorted(set(kept)), "in order, none twice"
    assert kept[-250:] == plain(lines[-250:]), "the newest lines are kept"
    running.close()
    assert port_closed(port)


def test_invalid_utf8_and_2mb_lines_are_shipped_safely(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, moto_url, instance_id)
    kmsg = Path(cfg.kmsg)
    running = run_agent(cfg)
    with kmsg.open("ab") as handle:
        handle.write(b"NVRM: bad bytes \xff\xfe\x80 end\n")
        handle.write(b"z" * (2 * 1024 * 1024) + b"\n")
        handle.write(b"6,7,1,-;caf\\xc3\\xa9 escaped \\xff\n")
        handle.write("ok after: café\n".encode())
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) == 4, "the four lines")
    bad, huge, escaped, after = messages(logs, stream)
    assert bad == shipped_message("NVRM: bad bytes \\xff\\xfe\\x80 end", None)
    mark = shipped_message("", None)
    assert huge.startswith(mark + "z" * 100_000) and huge.endswith(
        f" [nodemedic: truncated, {len(mark) + 2 * 1024 * 1024} bytes, "
        f"first {len(mark) + huge.count('z')} kept]"
    )
    assert utf8_size(huge) == MAX_MESSAGE_BYTES, "cut to the 256 KB event limit, not below"
    assert escaped == "café escaped \\xff"
    assert after == shipped_message("ok after: café", None)
    running.close()


def test_lines_that_trickle_in_are_sent_while_they_still_come(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    """Lines trickle in faster than the flush interval: a batch still goes when its oldest
    line is a second old, not when the source falls quiet."""
    client = logs_client(REGION, moto_url)
    sent: dict[str, float] = {}

    def record(request: Any, **_: Any) -> None:
        for event in json.loads(request.body)["logEvents"]:
            sent[event["message"]] = time.monotonic()

    client.meta.events.register("before-send.cloudwatch-logs.PutLogEvents", record)
    cfg = config(tmp_path, moto_url, instance_id, flush_interval=1.0)
    running = Running(Agent(cfg, client=client))
    time.sleep(0.5)
    written: dict[str, float] = {}
    lines = numbered(0, 12, "trickle")  # 3.3 s of lines at least, never 0.3 s apart
    for line in lines:
        append_lines(Path(cfg.kmsg), [line])
        written[line] = time.monotonic()
        time.sleep(0.3)
    wait_for(lambda: len(sent) == len(lines), "every line sent")
    running.close()
    # The first batch went while lines still came: about 1.2 s in (the 1 s flush interval,
    # the file reader's 0.2 s), two seconds before the last line, which a busy machine's
    # pauses of the agent's thread do not close.
    delays = {line: sent[shipped_message(line, None)] - written[line] for line in written}
    assert sent[shipped_message(lines[0], None)] < written[lines[-1]], delays
    assert max(delays.values()) < 3.0, delays
    assert messages(logs, kmsg_stream(instance_id)) == plain(lines)


def test_a_new_boot_reads_the_buffer_from_the_start(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, moto_url, instance_id)
    append_lines(Path(cfg.kmsg), numbered(0, 10))
    stream = kmsg_stream(instance_id)
    first = run_agent(cfg)
    wait_for(lambda: len(messages(logs, stream)) == 10, "first boot")
    first.close()
    same_boot = run_agent(cfg)
    append_lines(Path(cfg.kmsg), numbered(10, 12))
    wait_for(lambda: len(messages(logs, stream)) == 12, "resumed after the checkpoint")
    same_boot.close()
    run_agent(replace(cfg, boot_id="22222222-2222-3333-4444-555555555555"))
    wait_for(lambda: len(messages(logs, stream)) == 24, "the new boot's buffer")
    assert messages(logs, stream) == plain(numbered(0, 12)) * 2


def test_dev_kmsg_resumes_after_the_last_shipped_record(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    """On this machine's own kernel log (two benign marker lines are written to it)."""
    if not os.access("/dev/kmsg", os.R_OK | os.W_OK):
        pytest.skip("/dev/kmsg not readable and writable here")
    device = Path("/dev/kmsg")
    cfg = config(tmp_path, moto_url, instance_id, kmsg=str(device))
    stream = kmsg_stream(instance_id)
    before, after = (
        f"nodemedic test: {when} restart {uuid.uuid4()}" for when in ("before", "after")
    )
    # Written from user space, as the kernel records them: LOG_USER, shipped marked.
    before_text, after_text = (shipped_message(m, LOG_USER) for m in (before, after))
    write_device(device, before, 6)
    first = run_agent(cfg)
    wait_for(lambda: before_text in messages(logs, stream), "the buffer to the first marker")
    first.close()
    checkpoint = json.loads((tmp_path / "state" / "checkpoint.json").read_text())
    write_device(device, after, 6)
    second = run_agent(cfg)
    wait_for(lambda: after_text in messages(logs, stream), "the second marker")
    second.close()

    reader = DevKmsgReader(str(device), after=-1, max_lines=1_000_000)
    try:
        buffer = reader.read(0.5)
    finally:
        reader.close()
    records = [line.message for line in buffer]
    upto = records.index(after_text) + 1
    assert messages(logs, stream)[:upto] == records[:upto], "each record once, in order"
    first_marker = next(line for line in buffer if line.message == before_text)
    assert checkpoint["boot_id"] == cfg.boot_id and checkpoint["seq"] >= first_marker.seq

    new_boot = replace(cfg, boot_id="new-boot", instance_id=f"{instance_id}-b")
    third = run_agent(new_boot)
    other = kmsg_stream(new_boot.instance_id)
    wait_for(lambda: after_text in messages(logs, other), "the new boot's buffer")
    third.close()
    assert messages(logs, other)[:upto] == records[:upto], "a new boot starts at the beginning"


class OverwrittenRing:
    """``os.read`` on a character device (``/dev/null`` standing in for ``/dev/kmsg``) that
    answers like a kernel whose ring buffer moved on: two records, ``EPIPE``, then the
    oldest record left. Reads of anything else go to the real ``os.read``."""

    def __init__(self) -> None:
        self.real = os.read
        self.null = Path("/dev/null").stat().st_rdev
        self.script: list[bytes | None] = [
            b"6,0,10,-;first\n",
            b"6,1,20,-;second\n",
            None,
            b"4,1424,9000,-;NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n",
        ]

    def __call__(self, fd: int, size: int) -> bytes:
        if os.fstat(fd).st_rdev != self.null:
            return self.real(fd, size)
        if not self.script:
            time.sleep(0.05)  # /dev/null always polls readable; do not spin
            raise BlockingIOError
        step = self.script.pop(0)
        if step is None:
            raise BrokenPipeError
        return step


def test_records_the_kernel_overwrote_are_shipped_as_a_count_and_counted(
    *,
    tmp_path: Path,
    moto_url: str,
    logs: Any,
    instance_id: str,
    run_agent: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()
    cfg = config(tmp_path, moto_url, instance_id, kmsg="/dev/null", metrics_port=port)
    monkeypatch.setattr(os, "read", OverwrittenRing())
    running = run_agent(cfg)
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(messages(logs, stream)) == 4, "the records and the count")
    shipped = messages(logs, stream)
    assert shipped[2] == "nodemedic: kmsg ring buffer overwritten, 1422 records lost"
    assert [fault.rule.id if (fault := classify(m)) else None for m in shipped] == [
        None,
        None,
        "kmsg-records-lost",
        "nvidia-xid-79",
    ]
    assert scrape(port)["nodemedic_agent_kmsg_records_lost_total"] == 1422
    running.close()
    checkpoint = json.loads((tmp_path / "state" / "checkpoint.json").read_text())
    assert (checkpoint["boot_id"], checkpoint["seq"]) == (cfg.boot_id, 1424)


def cli_args(tmp_path: Path, endpoint: str, instance_id: str, *extra: str) -> list[str]:
    return [
        "--cluster", CLUSTER, "--instance-id", instance_id, "--region", REGION,
        "--endpoint-url", endpoint, "--create-log-group", "--boot-id", "b-1",
        "--kmsg", str(tmp_path / "kmsg"), "--state-dir", str(tmp_path / "state"),
        "--checks", "", "--metrics-port", "0", "--flush-interval", "0.2",
        "--retry-base-delay", "0.05", "--retry-max-delay", "0.5", *extra,
    ]  # fmt: skip


@pytest.fixture
def kmsg(tmp_path: Path) -> Path:
    """The empty file ``cli_args`` has the agent follow as its kernel log."""
    path = tmp_path / "kmsg"
    path.touch()
    return path


def test_sigterm_sends_the_open_batch_and_a_restart_repeats_nothing(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, kmsg: Path
) -> None:
    port = free_port()
    args = cli_args(
        tmp_path, moto_url, instance_id, "--metrics-port", str(port), "--flush-interval", "1"
    )
    process = agent_process(args)
    wait_for(lambda: not port_closed(port), "the agent to start")
    append_lines(kmsg, numbered(0, 2000))
    wait_for(lambda: scrape(port)["nodemedic_agent_lines_read_total"] == 2000, "lines read")
    process.send_signal(signal.SIGTERM)  # the batch waits for its flush interval: still open
    assert process.wait(timeout=20) == 0, process.stderr.read() if process.stderr else ""
    stream = kmsg_stream(instance_id)
    assert messages(logs, stream) == plain(numbered(0, 2000)), "sent before exiting"
    checkpoint = json.loads((tmp_path / "state" / "checkpoint.json").read_text())
    assert checkpoint == {"boot_id": "b-1", "seq": 2000, "offset": kmsg.stat().st_size}
    process = agent_process(args)
    append_lines(kmsg, numbered(2000, 2100))
    wait_for(lambda: len(messages(logs, stream)) >= 2100, "the lines after the restart")
    time.sleep(0.5)
    process.terminate()
    assert process.wait(timeout=20) == 0
    assert messages(logs, stream) == plain(numbered(0, 2100))


def test_sigkill_and_restart_lose_nothing_and_repeat_at_most_one_batch(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, kmsg: Path
) -> None:
    args = cli_args(tmp_path, moto_url, instance_id, "--max-batch-events", "100")
    stream = kmsg_stream(instance_id)
    process = agent_process(args)

    killed = threading.Event()

    def write() -> None:
        for start in range(0, 6000, 200):
            if start == 3000:  # the rest after the kill, however fast the agent shipped
                killed.wait(timeout=300)
            append_lines(kmsg, numbered(start, start + 200))
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    wait_for(lambda: len(messages(logs, stream)) >= 1000, "some lines shipped")
    process.kill()
    process.wait(timeout=10)
    at_kill = len(messages(logs, stream))
    killed.set()
    writer.join()
    assert at_kill < 6000, "killed mid-stream"
    process = agent_process(args)
    append_lines(kmsg, numbered(6000, 7000))
    every = set(plain(numbered(0, 7000)))
    wait_for(lambda: set(messages(logs, stream)) == every, "every line")
    time.sleep(0.5)
    process.terminate()
    process.wait(timeout=20)
    shipped = messages(logs, stream)
    assert list(dict.fromkeys(shipped)) == plain(numbered(0, 7000)), "in order, none lost"
    repeated = len(shipped) - 7000
    assert repeated <= 100, f"{repeated} lines repeated: more than the one batch in flight"


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


@pytest.mark.slow
def test_a_burst_of_100k_lines_is_shipped_with_bounded_memory(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, kmsg: Path
) -> None:
    port = free_port()
    process = agent_process(cli_args(tmp_path, moto_url, instance_id, "--metrics-port", str(port)))
    stream = kmsg_stream(instance_id)
    append_lines(kmsg, ["warm-up: the first call loads what every later call needs"])
    wait_for(lambda: len(messages(logs, stream)) == 1, "the warm-up line")
    baseline_kb = status_kb(process.pid, "VmRSS")
    Path(f"/proc/{process.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    xid = "NVRM: Xid (PCI:0000:2b:00): 13, pid=1234, name=python, Graphics SM Warp Exception"
    burst = numbered(0, 100_000, xid)  # 14 MB of text
    append_lines(kmsg, burst)
    wait_for(
        lambda: (
            scrape(port).get(f'nodemedic_agent_events_shipped_total{{stream="{stream}"}}', 0)
            == 100_001
        ),
        "the burst",
        timeout=120,
    )
    growth_mb = (status_kb(process.pid, "VmHWM") - baseline_kb) / 1024
    spooled = scrape(port)["nodemedic_agent_events_spooled_total"]
    process.terminate()
    process.wait(timeout=20)
    assert messages(logs, stream)[1:] == plain(burst)
    # Read faster than it can be sent, the burst waits on disk: memory holds a few batches
    # (about 5,000 lines each), not the 14 MB of text and its Python objects.
    assert spooled > 0
    assert growth_mb < 25, f"RSS grew {growth_mb:.1f} MB during the burst"


def test_bad_arguments_are_refused_before_anything_starts(tmp_path: Path) -> None:
    process = agent_process(
        ["--instance-id", "i-1", "--region", REGION, "--kmsg", str(tmp_path / "none")]
    )
    assert process.wait(timeout=20) == 2
    assert process.stderr is not None and b"--cluster is required" in process.stderr.read()
    process = agent_process(cli_args(tmp_path, "http://127.0.0.1:9", "i-1"))
    assert process.wait(timeout=20) == 2
    assert process.stderr is not None and b"does not exist" in process.stderr.read()
    (tmp_path / "kmsg").touch()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = agent_process(
            cli_args(tmp_path, "http://127.0.0.1:9", "i-1", "--metrics-port", str(port))
        )
        assert process.wait(timeout=20) == 2
    assert process.stderr is not None
    assert f"metrics endpoint 127.0.0.1:{port}: Address already in use" in (
        process.stderr.read().decode()
    )


def test_the_records_pstore_kept_of_the_boot_that_died_are_shipped_once_marked(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    cfg = config(tmp_path, moto_url, instance_id)
    append_lines(Path(cfg.kmsg), numbered(0, 2))
    stream = kmsg_stream(instance_id)
    first = run_agent(cfg)
    wait_for(lambda: len(messages(logs, stream)) == 2, "the boot that will die")
    first.close()
    shutil.copytree(EVENTS / "pstore", cfg.pstore_dir, ignore=shutil.ignore_patterns("*.md"))
    expected = [m for d in read_dumps(cfg.pstore_dir, cfg.boot_id, set()) for m in d.messages]
    rebooted = replace(cfg, boot_id="22222222-2222-3333-4444-555555555555")
    after = run_agent(rebooted)
    total = 2 + len(expected) + 2
    wait_for(lambda: len(messages(logs, stream)) == total, "pstore, then the new boot")
    after.close()
    shipped = messages(logs, stream)
    assert shipped[2 : 2 + len(expected)] == expected, "before the new boot's lines"
    panic = "Kernel panic - not syncing: Fatal exception in interrupt"
    assert f"[previous boot {cfg.boot_id}] {panic}" in shipped
    found = [classify(line) for line in shipped]
    faults = [f for f in found if f is not None and f.fault_id == "kernel-panic"]
    assert faults and all(f.previous_boot for f in faults)
    restarted = run_agent(rebooted)
    append_lines(Path(cfg.kmsg), numbered(2, 3))
    wait_for(lambda: len(messages(logs, stream)) == total + 1, "a restart's new line")
    restarted.close()
    assert messages(logs, stream)[total:] == plain(numbered(2, 3)), "pstore shipped once"
    assert sorted(p.name for p in cfg.pstore_dir.iterdir()) == sorted(
        p.name for p in (EVENTS / "pstore").glob("dmesg-*")
    ), "the records are left for systemd-pstore"
