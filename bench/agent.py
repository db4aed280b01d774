"""The node agent's costs: parse rate, memory, idle CPU, and how full its PutLogEvents
requests are next to watchtower's (the usual Python CloudWatch Logs handler), same run.

- parse: kmsg records (real messages from tests/events/kmsg, with continuation lines as
  /dev/kmsg prints them) read from a file and batched, in one thread (one core);
- peak RSS: ``python -m agent`` shipping a burst to a moto server, VmHWM at the end, with
  signing off and on (proof of origin: a key registered with an identity document the
  local world's simulated IMDSv2 serves, sealed with the moto KMS, every event signed);
- idle CPU: the same processes with nothing to read, over ``--idle-seconds``;
- shipping at the service's limits: PutLogEvents requests per 1,000 lines, events and bytes
  per request against the 10,000-event and 1,048,576-byte limits, for nodemedic (the agent
  in-process, from a file) and for watchtower (a logging handler, same lines), both with
  their defaults (``bench/fill.py``).

    python -m bench.agent [--lines N] [--burst N] [--idle-seconds 30] [--ship-lines N]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from agent.batch import Batcher
from agent.kmsg import FileKmsgReader
from agent.main import batch_lines
from agent.telemetry.neuron_report import NeuronTelemetry
from bench.fill import fill_report, nodemedic_fill, watchtower_fill
from nodemedic.contracts.env import ENV_IMDS_ENDPOINT
from nodemedic.contracts.logs import origin_key_alias

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "tests" / "events" / "kmsg"
NEURON_REPORT = ROOT / "tests" / "events" / "neuron-monitor" / "inf1-xlarge-one-runtime.jsonl"
GPU_REPORT = ROOT / "tests" / "events" / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
REGION = "us-east-1"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": REGION,
}


def messages() -> list[str]:
    benign = [s for s in (EVENTS / "benign.txt").read_text().splitlines() if s and s[0] != "#"]
    faults = [
        s.split("\t", 1)[1]
        for s in (EVENTS / "faults.txt").read_text().splitlines()
        if s and s[0] != "#"
    ]
    return benign * 9 + faults


def records(count: int, seed: int = 11) -> bytes:
    """``count`` kmsg records; one in five carries device metadata lines."""
    rng = random.Random(seed)
    pool = messages()
    out = []
    ts = 5_000_000
    for seq in range(count):
        ts += rng.randint(1, 5000)
        text = re.sub(r"pid=\d+", f"pid={rng.randint(100, 99999)}", rng.choice(pool))
        out.append(f"{rng.choice((3, 4, 6))},{seq},{ts},-;{text}\n")
        if seq % 5 == 0:
            out.append(" SUBSYSTEM=pci\n DEVICE=+pci:0000:2b:00.0\n")
    return "".join(out).encode()


def parse_rate(count: int, directory: Path) -> tuple[float, float]:
    """(lines per CPU second of the parsing thread, lines per wall-clock second): the first
    is what one core does, the second what it did on this machine, busy or not."""
    path = directory / "records"
    path.write_bytes(records(count))
    started, cpu_started = time.perf_counter(), time.thread_time()
    reader = FileKmsgReader(str(path))
    batcher = Batcher("i-0bench/kmsg")
    seen = 0
    while lines := reader.read(0):
        seen += len(lines)
        batch_lines(lines, batcher, "boot", 0)
    cpu, elapsed = time.thread_time() - cpu_started, time.perf_counter() - started
    assert seen == count, (seen, count)
    return count / cpu, count / elapsed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int, name: str) -> int:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1])) for line in body.splitlines() if line.startswith(name)
    )


def agent_process(
    directory: Path,
    endpoint: str,
    port: int,
    imds: Callable[[str], str] | None,
    extra: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """The agent as its own process, with ``extra`` arguments; it signs where ``imds`` (the
    IMDSv2 endpoint of an instance) is given."""
    instance_id = f"i-{port:017x}"
    kmsg = directory / "kmsg"
    kmsg.touch()
    args = [
        "--cluster", "bench", "--instance-id", instance_id, "--region", REGION,
        "--endpoint-url", endpoint, "--create-log-group", "--boot-id", "bench",
        "--kmsg", str(kmsg), "--state-dir", str(directory / "state"),
        "--metrics-port", str(port), *extra,
    ]  # fmt: skip
    env = {**os.environ, **AWS_ENV, "PYTHONPATH": str(ROOT)}
    if imds is None:
        args.append("--no-sign")
    else:
        env[ENV_IMDS_ENDPOINT] = imds(instance_id)
    process = subprocess.Popen(
        [sys.executable, "-m", "agent", *args], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            scrape(port, "nodemedic_agent_lines_read_total")
            return process
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def burst_and_idle(
    directory: Path,
    endpoint: str,
    burst: int,
    idle_seconds: float,
    imds: Callable[[str], str] | None = None,
) -> tuple[float, float, float, float]:
    """(peak RSS MB, burst lines/s shipped, idle CPU %, RSS MB before the burst)."""
    port = free_port()
    process = agent_process(directory, endpoint, port, imds)
    try:
        time.sleep(2.0)  # start-up (imports, first health checks) is not idle time
        signing = scrape(port, "nodemedic_agent_signing")
        assert signing == (imds is not None), f"signing is {signing} with IMDS at {imds}"
        before = cpu_seconds(process.pid)
        time.sleep(idle_seconds)
        idle = (cpu_seconds(process.pid) - before) / idle_seconds * 100
        rss_idle = status_kb(process.pid, "VmRSS") / 1024
        data = records(burst)
        started = time.perf_counter()
        (directory / "kmsg").write_bytes(data)
        while scrape(port, "nodemedic_agent_events_shipped_total") < burst:
            time.sleep(0.05)
        rate = burst / (time.perf_counter() - started)
        peak = status_kb(process.pid, "VmHWM") / 1024
    finally:
        process.terminate()
        process.wait(timeout=30)
    return peak, rate, idle, rss_idle


def report_cost(reports: int) -> float:
    """CPU milliseconds to read one recorded neuron-monitor report (one JSON line)."""
    line, telemetry = NEURON_REPORT.read_bytes(), NeuronTelemetry()
    started = time.process_time()
    for _ in range(reports):
        telemetry.read_line(line)
    return (time.process_time() - started) / reports * 1000


def telemetry_idle(
    directory: Path, endpoint: str, idle_seconds: float, telemetry: bool
) -> tuple[float, float]:
    """(idle CPU %, RSS MB) of an agent whose health checks read a recorded nvidia-smi
    report and, with ``telemetry``, a recorded neuron-monitor report every second (what a
    neuron-monitor period of 1 s streams), scraped once a second as Prometheus would."""
    feed = f"sh -c 'while :; do cat {NEURON_REPORT}; sleep 1; done'"
    checks = "nvidia,neuron-monitor" if telemetry else "nvidia"
    extra = ["--checks", checks, "--nvidia-smi", f"cat {GPU_REPORT}", "--neuron-monitor", feed]
    port = free_port()
    process = agent_process(directory, endpoint, port, None, extra)
    try:
        time.sleep(3.0)  # start-up, the first check run and the first reports
        before, started = cpu_seconds(process.pid), time.monotonic()
        while time.monotonic() - started < idle_seconds:
            scrape(port, "nodemedic_agent_lines_read_total")
            time.sleep(1.0)
        idle = (cpu_seconds(process.pid) - before) / (time.monotonic() - started) * 100
        rss = status_kb(process.pid, "VmHWM") / 1024
    finally:
        process.terminate()
        process.wait(timeout=30)
    return idle, rss


CLIENTS = {
    "python alone": "pass",
    "stock boto3 logs client (before)": (
        "import boto3; boto3.session.Session().client('logs', region_name='us-east-1')"
    ),
    "the agent's logs client (agent.botosession)": (
        "from agent.main import logs_client; logs_client('us-east-1', None)"
    ),
}
"""What the idle agent's RSS is made of: a fresh interpreter that builds each client."""


def client_rss(build: str) -> float:
    """VmRSS (MB) of a fresh interpreter once ``build`` ran."""
    probe = f"{build}\nimport gc; gc.collect(); print(open('/proc/self/status').read())"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return next(int(row.split()[1]) for row in out.splitlines() if row.startswith("VmRSS:")) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200_000, help="records for the parse rate")
    parser.add_argument("--burst", type=int, default=100_000, help="lines in the RSS burst")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="idle CPU window")
    parser.add_argument("--ship-lines", type=int, default=50_000, help="lines for the batch fill")
    args = parser.parse_args()
    os.environ.update(AWS_ENV)
    for noisy in ("agent", "werkzeug", "botocore"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    import boto3
    from moto.server import ThreadedMotoServer

    from world.aws.identity import MetadataService, local_authority

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    kms = boto3.client("kms", endpoint_url=endpoint, region_name=REGION)
    kms.create_alias(
        AliasName=origin_key_alias("bench"), TargetKeyId=kms.create_key()["KeyMetadata"]["KeyId"]
    )
    metadata = MetadataService(local_authority(), REGION)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        per_cpu, per_wall = parse_rate(args.lines, work)
        print(
            f"parse+batch, one thread: {per_cpu:,.0f} lines per CPU second "
            f"({per_wall:,.0f} per wall-clock second; {args.lines:,} records)"
        )
        print("  target >= 50,000 lines/s on one core")
        print("RSS of a fresh interpreter building a CloudWatch Logs client:")
        for label, build in CLIENTS.items():
            print(f"  {label:<44} {client_rss(build):5.1f} MB")
        for label, imds in (("signing off", None), ("signing on", metadata.endpoint)):
            (work / label).mkdir()
            peak, burst_rate, idle, rss_idle = burst_and_idle(
                work / label, endpoint, args.burst, args.idle_seconds, imds
            )
            print(f"agent process, {label}:")
            print(
                f"  idle CPU over {args.idle_seconds:.0f} s: {idle:.3f} % of one core "
                "(target <= 0.5 %)"
            )
            print(
                f"  RSS idle: {rss_idle:.1f} MB; peak after a {args.burst:,}-line burst: "
                f"{peak:.1f} MB (target <= 40 MB idle, <= 60 MB peak)"
            )
            print(f"  burst shipped end to end: {burst_rate:,.0f} lines/s")
        cost = report_cost(2000)
        print(
            f"neuron-monitor report ({NEURON_REPORT.stat().st_size:,} bytes) read in "
            f"{cost:.3f} ms of CPU: one a second is {cost / 10:.3f} % of one core "
            "(target <= 1 %)"
        )
        for telemetry in (False, True):
            label = "with" if telemetry else "without"
            (work / label).mkdir()
            idle, rss = telemetry_idle(work / label, endpoint, args.idle_seconds, telemetry)
            print(
                f"agent process {label} Neuron telemetry (a report a second), scraped every "
                f"second: CPU {idle:.3f} % of one core, peak RSS {rss:.1f} MB"
            )
        lines = [
            line.split(";", 1)[1]
            for line in records(args.ship_lines).decode().splitlines()
            if not line.startswith(" ")
        ]
        (work / "ship").mkdir()
        size = sum(len(line.encode()) for line in lines) / len(lines)
        print(
            f"PutLogEvents at the service's limits, {len(lines):,} kernel lines "
            f"({size:.0f} bytes each on average) written at once, each shipper's defaults:"
        )
        filled = nodemedic_fill(work / "ship", endpoint, REGION, lines)
        print(fill_report("nodemedic", filled, len(lines)))
        print(fill_report("watchtower", watchtower_fill(endpoint, REGION, lines), len(lines)))
    metadata.close()
    server.stop()


if __name__ == "__main__":
    main()
