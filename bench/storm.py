"""A storm through the real local pipeline, over a background of heartbeats, health results
and kernel noise: most nodes report the same fatal fault within a minute (a fleet event,
held), or with ``--distinct`` a share of the nodes fail at once, each in its own way (no
fleet event: the breaker paces the remediations).

    python -m bench.storm [--sizes 100,1000] [--share 0.9] [--spread 30]
    python -m bench.storm --distinct [--sizes 100,1000] [--share 0.1] [--spread 5]

With ``--distinct`` each stormed node gets a different acting rule's line (reboot or
replace, taken in turn from the catalog, none on ``fleet_min_nodes`` nodes) and the bench
reports, per node, line written → node cordoned (p50/p90 of those cordoned), and how the
remediations ended (their mails: replaced, rebooted, held by the breaker…).

Each size runs in a fresh process (its own world, its own peak RSS), the smallest first as
the baseline of the same run. A node here is a light stream writer, not an agent process:
the world starts its moto server, the synthesized stack with its state machines, the
classifier and the other Lambdas in-process, the kube-apiserver with one Node per instance
and the Auto Scaling group, but no agent (``local_world(agent_processes=False)``). A pool
of threads writes each node's ``<id>/kmsg`` and ``<id>/health`` streams with PutLogEvents
as an agent would, one request per node and flush. The lines are unsigned, so the cluster
runs with ``proof_of_origin: audit``: proving origin costs one KMS decrypt per node and
boot, which this storm does not measure.

moto delivers every line to the classifier, whatever the subscription filter says; the
deliveries AWS would drop are counted apart (``bench/meter.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client

from agent.inject import find_rule, line_for
from bench.cost import benign_lines, diff
from bench.meter import Meter, metering
from bench.mttr import acting_faults, percentile, rotation
from console.cli.breaker import status
from console.cli.deadletters import dead_letter
from nodemedic.catalog import load_catalog
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.contracts.kube import FLEET_LABEL
from nodemedic.contracts.logs import (
    health_stream,
    heartbeat_message,
    kmsg_stream,
    node_log_group,
    shipped_message,
)
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from nodemedic.health.result import Result, utc_stamp
from world.scenarios.kit import DMA_ERROR
from world.start import local_world
from world.terminal import chatter_to, copy_of
from world.world import World, demo_settings

WRITERS = 8
"""Threads writing the nodes' streams (each request is one node's batch)."""
DECIDED_TIMEOUT = 1200.0
"""Seconds the storm may take to be decided on every node before the rest count as errors."""
DEVICES = 8


def health_batch(now: datetime) -> list[str]:
    """One healthy check run: a result line per GPU, as the agent writes it."""
    figures = {"temperature_c": 41, "retired_pages": 0}
    return [
        Result(
            NVIDIA_SMI_CHECK, f"0000:{16 * i:02x}:00.0", "ok", "Healthy", figures, utc_stamp(now)
        ).to_json()
        for i in range(DEVICES)
    ]


class Writers:
    """The nodes' log streams, written by a pool of threads; counts what it sent."""

    def __init__(self, world: World) -> None:
        self.logs = world.aws("logs")
        self.group = node_log_group(world.settings.name)
        self.sent: Counter[str] = Counter()
        self.failures: list[str] = []
        self.written: dict[str, float] = {}
        """Stream → when its last batch was stored."""

    def create(self, instance_ids: list[str]) -> None:
        streams = [s(i) for i in instance_ids for s in (kmsg_stream, health_stream)]
        with ThreadPoolExecutor(WRITERS) as pool:
            list(
                pool.map(
                    lambda s: self.logs.create_log_stream(logGroupName=self.group, logStreamName=s),
                    streams,
                )
            )

    def put(self, stream: str, messages: list[str]) -> None:
        now = int(time.time() * 1000)
        try:
            self.logs.put_log_events(
                logGroupName=self.group,
                logStreamName=stream,
                logEvents=[{"timestamp": now, "message": m} for m in messages],
            )
        except Exception as exc:  # a failed write is a figure, not a crash
            self.failures.append(f"{stream}: {exc!r}")
            return
        self.sent["lines"] += len(messages)
        self.sent["requests"] += 1
        self.written[stream] = time.time()

    def write_all(self, batches: list[tuple[str, list[str]]], spread: float = 0.0) -> None:
        """Every (stream, lines) batch, spread evenly over ``spread`` seconds."""
        began = time.monotonic()

        def one(index: int) -> None:
            time.sleep(max(0.0, began + spread * index / len(batches) - time.monotonic()))
            self.put(*batches[index])

        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(one, range(len(batches))))


def background(instance_ids: list[str]) -> list[tuple[str, list[str]]]:
    """A heartbeat and a health run from every node, and a benign kernel line from a third."""
    noise = benign_lines()
    heartbeat = heartbeat_message({"interval": 300, "lines_read": 100})
    now = datetime.now(UTC)
    batches = [(kmsg_stream(i), [heartbeat]) for i in instance_ids]
    batches += [(health_stream(i), health_batch(now)) for i in instance_ids]
    batches += [(kmsg_stream(i), [random.choice(noise)]) for i in instance_ids[::3]]
    return batches


def executions(world: World) -> Counter[str]:
    """The remediation executions by status."""
    sfn = world.aws("stepfunctions")
    found: Counter[str] = Counter()
    for page in sfn.get_paginator("list_executions").paginate(
        stateMachineArn=world.state_machine_arn
    ):
        found.update(e["status"] for e in page["executions"])
    return found


def wait_decided(world: World, expected: int, timeout: float) -> tuple[float, Counter[str]]:
    """Seconds until ``expected`` executions exist and none runs (bounded), and their statuses."""
    began = time.monotonic()
    found = executions(world)
    while sum(found.values()) < expected or found["RUNNING"]:
        if time.monotonic() - began > timeout:
            break
        time.sleep(2)
        found = executions(world)
    return time.monotonic() - began, found


def dead_letters(world: World) -> int:
    queue = world.deployment.find("AWS::SQS::Queue", "IngestDeadLetters").ref
    attributes = world.aws("sqs").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def dead_letter_errors(world: World) -> list[str]:
    """The errors Lambda gave with the first dead-lettered events, so that a run that
    dead-lettered one names its cause; a zero visibility timeout leaves them where they were."""
    queue = world.deployment.find("AWS::SQS::Queue", "IngestDeadLetters").ref
    messages = world.aws("sqs").receive_message(
        QueueUrl=queue, MaxNumberOfMessages=10, VisibilityTimeout=0, MessageAttributeNames=["All"]
    )
    return [dead_letter(m).error or "" for m in messages.get("Messages", [])]


def fault_lines(count: int, distinct: bool, settings: Any) -> list[str]:
    """The kernel lines of ``count`` stormed nodes as the agent ships them: one fault for
    all, or a different acting fault on each (at most ``fleet_min_nodes`` - 1 nodes each)."""
    catalog = load_catalog()
    faults = (
        rotation(acting_faults(catalog, ("reboot", "replace")), count, settings)
        if distinct
        else [DMA_ERROR] * count
    )
    return [shipped_message(line_for(find_rule(catalog, f.kind, f.value)), None) for f in faults]


def cordon_seconds(world: World, writers: Writers, stormed: list[str]) -> list[float]:
    """Line stored → node first seen cordoned, for each stormed node that was."""
    found = []
    for instance_id in stormed:
        written = writers.written.get(kmsg_stream(instance_id))
        seen = written and world.watch.first(instance_id, written, lambda s: s.unschedulable)
        if written and seen:
            found.append(seen.at - written)
    return found


def storm(
    nodes: int, share: float, spread: float, workdir: Path, *, distinct: bool = False
) -> dict[str, Any]:
    """The storm on ``nodes`` nodes; its figures."""
    progress = copy_of(sys.stderr)
    patterns = subscription_filter_patterns(load_catalog())
    meter = Meter(lambda message: selected(patterns, message))
    settings = demo_settings(proof_of_origin="audit")
    with (
        chatter_to(workdir / "world.log"),
        metering(meter),
        local_world(
            workdir,
            settings=settings,
            nodes=nodes,
            agent_processes=False,
            say=lambda t: print(t, file=progress, flush=True),
        ) as world,
    ):
        instance_ids = sorted(world.machines)
        writers = Writers(world)
        writers.create(instance_ids)
        before = meter.counts()
        writers.write_all(background(instance_ids))
        stormed = random.sample(instance_ids, round(nodes * share))
        print(f"storm: {len(stormed)} of {nodes} nodes over {spread:g}s", file=progress)
        began, storm_began = time.monotonic(), time.time()
        lines = fault_lines(len(stormed), distinct, settings)
        batches = [(kmsg_stream(i), [line]) for i, line in zip(stormed, lines, strict=True)]
        writers.write_all(batches, spread)
        written = time.monotonic() - began
        waited, statuses = wait_decided(world, len(stormed), DECIDED_TIMEOUT)
        used = diff(meter.counts(), before)
        cordoned = {s.name for s in world.watch.seen if s.at >= storm_began and s.unschedulable}
        names = {world.machines[i].node for i in stormed}
        # One list, not a read per node; a Node deleted since is simply not in it.
        nodes_now = [
            n for n in client.CoreV1Api(world.api).list_node().items if n.metadata.name in names
        ]
        mails = world.inbox.messages()
        fleet_mails = [m for m in mails if m.outcome == "fleet"]
        stopped = Counter(
            f"stopped at {m.body.get('stopped_at')}: {json.dumps(m.body.get('error'))[:200]}"
            for m in mails
            if m.outcome == "failed"
        )
        breaker = status(world.aws("dynamodb"), world.ledger_table, settings.name, int(time.time()))
        errors = (
            len(writers.failures)
            + sum(n for s, n in statuses.items() if s != "SUCCEEDED")
            + max(0, len(stormed) - sum(statuses.values()))
            + dead_letters(world)
        )
        cordon = cordon_seconds(world, writers, stormed)
        return {
            "nodes": nodes,
            "distinct": distinct,
            "stormed": len(stormed),
            "cordon_p50_s": percentile(cordon, 0.5) if cordon else None,
            "cordon_p90_s": percentile(cordon, 0.9) if cordon else None,
            "outcomes": dict(Counter(m.outcome for m in mails)),
            "lines": writers.sent["lines"],
            "requests": writers.sent["requests"],
            "storm_written_s": written,
            "deliveries": used["lambda:delivery"],
            "deliveries_aws_drops": used["lambda:filtered"],
            "invocations": {
                "classifier": used["lambda:delivery"] + used["lambda:filtered"],
                "state machine tasks": used["lambda:invocation"],
            },
            "executions": sum(statuses.values()),
            "statuses": dict(statuses),
            # From the first fault line written to the last execution ended.
            "decided_s": written + waited,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "fleet_mails": len(fleet_mails),
            "fleet_mail_nodes": len(fleet_mails[0].body.get("nodes", [])) if fleet_mails else 0,
            "fleet_labelled": sum(1 for n in nodes_now if FLEET_LABEL in (n.metadata.labels or {})),
            "cordoned": len(cordoned),
            "still_cordoned": sum(1 for n in nodes_now if n.spec.unschedulable),
            "breaker": breaker["state"],
            "errors": errors,
            "failures": writers.failures[:5] + [f"{n} x {s}" for s, n in stopped.items()],
        }


ROWS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("nodes (stormed)", lambda r: f"{r['nodes']} ({r['stormed']})"),
    ("lines sent (PutLogEvents)", lambda r: f"{r['lines']} ({r['requests']})"),
    ("storm written in", lambda r: f"{r['storm_written_s']:.1f} s"),
    # moto delivers a line to each of the two subscription filters; AWS, to those it matches.
    ("deliveries passing the filter", lambda r: f"{r['deliveries']:.0f}"),
    ("  + moto's that AWS would drop", lambda r: f"{r['deliveries_aws_drops']:.0f}"),
    ("Lambda invocations", lambda r: f"{sum(r['invocations'].values()):.0f}"),
    ("executions started", lambda r: str(r["executions"])),
    ("decided on every node after", lambda r: f"{r['decided_s']:.1f} s"),
    ("peak RSS of the process", lambda r: f"{r['peak_rss_mb']:.0f} MB"),
    ("fleet mails (nodes named)", lambda r: f"{r['fleet_mails']} ({r['fleet_mail_nodes']})"),
    ("nodes marked fleet event", lambda r: str(r["fleet_labelled"])),
    ("cordoned at any time", lambda r: str(r["cordoned"])),
    (
        "line -> cordoned p50 / p90",
        lambda r: (
            "-"
            if r["cordon_p50_s"] is None
            else (f"{r['cordon_p50_s']:.1f} / {r['cordon_p90_s']:.1f} s")
        ),
    ),
    ("cordoned at the end", lambda r: str(r["still_cordoned"])),
    ("breaker", lambda r: str(r["breaker"])),
    ("errors", lambda r: str(r["errors"])),
]


def report(results: list[dict[str, Any]]) -> None:
    if results[0]["distinct"]:
        print("nodemedic storm: a share of the nodes fail at once, each its own fault, local world")
    else:
        print("nodemedic storm: one fatal fault (Neuron DMA error) on most nodes, local world")
    print(f"  baseline: {results[0]['nodes']} nodes")
    print(f"  {'':<32}" + "".join(f"{r['nodes']:>14} nodes" for r in results))
    for label, cell in ROWS:
        print(f"  {label:<32}" + "".join(f"{cell(r):>20}" for r in results))
    for r in results:
        by_function = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["invocations"].items()))
        print(f"  invocations at {r['nodes']} nodes: {by_function}")
        ended = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        print(f"  remediations at {r['nodes']} nodes ended (mails): {ended or 'none'}")
        for failure in r["failures"]:
            print(f"  failed: {failure}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="node counts, the baseline first")
    parser.add_argument(
        "--distinct", action="store_true", help="each stormed node fails in its own way"
    )
    parser.add_argument("--share", type=float, help="of the nodes in the storm (0.9; 0.1)")
    parser.add_argument("--spread", type=float, help="seconds the storm lasts (30; 5)")
    parser.add_argument("--nodes", type=int, help=argparse.SUPPRESS)  # one size, as JSON
    args = parser.parse_args()
    share = args.share if args.share is not None else (0.1 if args.distinct else 0.9)
    spread = args.spread if args.spread is not None else (5.0 if args.distinct else 30.0)
    if args.nodes:
        with tempfile.TemporaryDirectory(prefix="nodemedic-storm-") as workdir:
            figures = storm(args.nodes, share, spread, Path(workdir), distinct=args.distinct)
            print(json.dumps(figures))
        return 0
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.storm",
                f"--nodes={size}",
                f"--share={share}",
                f"--spread={spread}",
                *(["--distinct"] if args.distinct else []),
            ],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
    report(results)
    return 0 if all(r["errors"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
