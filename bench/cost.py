"""What nodemedic costs per 1,000 nodes a month, measured in the local world and priced with
the dated list prices of ``bench/prices.json`` (us-east-1, on demand).

Two phases in one world: a baseline (benign kernel lines from real boot logs,
``tests/events/kmsg/benign.txt``, written to every node) and then faults (a Neuron DMA
error, replaced: the costliest path) one at a time. What each phase consumed is counted
where moto serves it (``bench/meter.py``): Logs bytes (message + 26 per event), Lambda
invocations with their in-process durations at the template's memory size, state
transitions and execution-log bytes from each execution's history, DynamoDB request
units, PutMetricData and SNS calls. moto delivers every line to the classifier; a delivery
is counted only if a line passes the subscription filter, as CloudWatch Logs would.

Per node and day, at the stated rates: ``--noise-per-day`` benign lines (default 100:
``tests/events/kmsg/dmesg-sample.txt`` holds 17 lines after boot over 13.9 h, 29 a day,
times 3 for margin; the sample's timestamps are assembled, SOURCES.md says, so this is a
stated assumption, not a measurement), a health check run every 60 s (the agent's
default) and a heartbeat every 300 s, plus ``rate / 100`` remediations.

    python -m bench.cost [--nodes 4] [--minutes 2] [--faults 3] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

from agent.healthship import HEALTHY_EVERY
from agent.inject import append_file
from bench.meter import Meter, metering
from bench.mttr import finished_execution, next_machine
from bench.pricing import Fixed, Usage, bill, load_prices, monthly_dollars
from nodemedic.catalog import load_catalog
from nodemedic.contracts.logs import HEARTBEAT_SECONDS, heartbeat_message
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from nodemedic.origin.signing import SIGNATURE_BYTES
from stacks import synth
from world.observe import Observer, follow
from world.scenarios.kit import DMA_ERROR
from world.start import local_world
from world.terminal import chatter_to, copy_of
from world.timeline import inject
from world.world import World

BENIGN = Path(__file__).parents[1] / "tests" / "events" / "kmsg" / "benign.txt"
CHECK_SECONDS = 60
FAULT_RATES = (0.1, 1.0, 5.0)
"""Remediations per 100 nodes per day."""
TARGET = 50.0
"""Dollars per 1,000 nodes a month at one fault per 100 nodes a day."""
SMALL_CLUSTER = 64
"""A cluster size whose bill the report reads off the split, where the fixed part shows."""


def benign_lines() -> list[str]:
    lines = BENIGN.read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def run_noise(world: World, minutes: float, per_minute: float) -> int:
    """Benign lines into every node's kernel log for ``minutes``; how many were written."""
    lines, written = benign_lines(), 0
    deadline = time.monotonic() + minutes * 60
    while time.monotonic() < deadline:
        for machine in world.live_machines():
            append_file(world.agents.kmsg(machine.instance_id), random.choice(lines), 6, False)
            written += 1
        time.sleep(60 / per_minute)
    time.sleep(3)  # the last batches shipped and delivered
    return written


def run_faults(world: World, count: int) -> list[list[dict[str, Any]]]:
    """``count`` replaced nodes, one at a time; the execution histories."""
    observer, used = Observer(world), set[str]()
    histories: list[list[dict[str, Any]]] = []
    for _ in range(count):
        machine = next_machine(world, used)
        used.add(machine.instance_id)
        run = inject(world, machine, DMA_ERROR)
        follow(observer, [run], lambda r, s: None, timeout=60)
        arn = observer.execution_arn(run) or ""
        finished_execution(observer.sfn, arn)
        histories.append(observer.history(run))
    time.sleep(3)  # the replacements' agents have shipped their start-up
    return histories


def diff(after: Counter[str], before: Counter[str]) -> Counter[str]:
    return Counter({k: v - before.get(k, 0) for k, v in after.items()})


def classifier_traced(template: dict[str, Any]) -> bool:
    """Whether Lambda records a trace of the classifier's invocations: only under active
    tracing, since CloudWatch Logs' deliveries carry no sampled trace of their own."""
    return any(
        r["Properties"].get("TracingConfig") == {"Mode": "Active"}
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "lambdas.classify.handler.handler"
    )


def baseline(
    start: Counter[str], noise: Counter[str], lines: int, noise_per_day: float, traced: bool
) -> Usage:
    """One node's day with no fault: noise, health runs and heartbeats at their rates."""
    delivered = max(1.0, noise["lambda:delivery"] + noise["lambda:filtered"])
    per_call = Usage(
        lambda_requests=1,
        lambda_gb_seconds=(noise["gb_seconds:delivery"] + noise["gb_seconds:filtered"]) / delivered,
        write_units=noise["write_units"] / delivered,
        read_units=noise["read_units"] / delivered,
        log_bytes=noise["lambda_log_bytes"] / delivered,
        traces=1 if traced else 0,
    )
    matched_share = noise["lambda:delivery"] / delivered
    heartbeat = len(heartbeat_message(dict.fromkeys(("interval", "lines_read"), 99999)))
    # Each check run is one PutLogEvents on the node's health stream (start-up and noise);
    # a healthy node's unchanged results ship once per HEALTHY_EVERY (agent.healthship).
    shipped = start + noise
    per_run = shipped["log_bytes:health"] / max(1, shipped["log_puts:health"])
    day = Usage(
        log_bytes=noise["log_bytes:kmsg"] / max(1, lines) * noise_per_day
        + per_run * 86400 / max(CHECK_SECONDS, HEALTHY_EVERY)
        + (heartbeat + SIGNATURE_BYTES + 26) * 86400 / HEARTBEAT_SECONDS,
        # The classifier records every heartbeat with one UpdateItem of a small item
        # (DynamoHeartbeats); the baseline phase is shorter than a heartbeat interval, so
        # the noise deliveries it measures carry none of them.
        write_units=86400 / HEARTBEAT_SECONDS,
    )
    # At the stated rates each passing line is its own delivery; health results of a
    # healthy node pass no filter term (checked on the start-up runs below).
    deliveries = noise_per_day * matched_share + 86400 / HEARTBEAT_SECONDS
    return day.plus(per_call, deliveries)


def per_remediation(
    faults: Counter[str], histories: list[list[dict[str, Any]]], traced: bool
) -> Usage:
    count = max(1, len(histories))
    history_bytes = sum(len(json.dumps(e, default=str)) + 26 for h in histories for e in h)
    agent_bytes = sum(v for k, v in faults.items() if k.startswith("log_bytes:"))
    return Usage(
        log_bytes=agent_bytes + faults["lambda_log_bytes"] + history_bytes,
        lambda_requests=faults["lambda:delivery"] + faults["lambda:invocation"],
        lambda_gb_seconds=faults["gb_seconds:delivery"] + faults["gb_seconds:invocation"],
        transitions=sum(transitions(h) for h in histories),
        write_units=faults["write_units"],
        read_units=faults["read_units"],
        metric_requests=faults["call:cloudwatch:PutMetricData"],
        sns_publishes=faults["call:sns:Publish"],
        # Each execution is one trace (its Lambdas within it); deliveries are traced only
        # under the classifier's active tracing.
        traces=faults["lambda:delivery"] * traced + len(histories),
    ).times(1 / count)


def fixed_costs(template: dict[str, Any], meter: Meter, world: World) -> Fixed:
    """Alarms from the template; custom metrics as published (EMF and PutMetricData)."""
    # A custom metric is a namespace, name and set of dimension values: each one is billed.
    listed = world.aws("cloudwatch").list_metrics()["Metrics"]
    metrics = {
        (
            m["Namespace"],
            m["MetricName"],
            str(sorted((d["Name"], d["Value"]) for d in m.get("Dimensions", []))),
        )
        for m in listed
    } | meter.emf
    standard = insights = 0
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        queries = [q for q in resource["Properties"].get("Metrics", []) if "Expression" in q]
        text = json.dumps(queries)
        if "SELECT" in text:
            insights += max(1, sum(1 for n, m, _ in metrics if n in text and m in text))
        else:
            standard += max(1, len(resource["Properties"].get("Metrics", [])))
    sample = "\n".join(meter.sample).encode()
    return Fixed(
        custom_metrics=len(metrics),
        standard_alarm_metrics=standard,
        insights_metrics_analysed=insights,
        retention_days=world.settings.log_retention_days,
        compression=len(gzip.compress(sample)) / max(1, len(sample)),
    )


def transitions(history: list[dict[str, Any]]) -> int:
    """Step Functions bills a transition per state entered."""
    return sum(1 for event in history if event["type"].endswith("StateEntered"))


def report(
    base: Usage, fix: Usage, fixed: Fixed, nodes_run: int, runs: list[list[dict[str, Any]]]
) -> None:
    prices = load_prices()
    print(
        f"nodemedic cost per 1,000 nodes per month, us-east-1 list prices of {prices['date']}"
        f" (measured on {nodes_run} nodes in the local world)"
    )
    columns = [("baseline", base)] + [
        (f"{r:g}/100/day", base.plus(fix, r / 100)) for r in FAULT_RATES
    ]
    tables = [monthly_dollars(usage, fixed, prices) for _, usage in columns]
    print(f"  {'service':<20}" + "".join(f"{name:>14}" for name, _ in columns))
    for service in tables[0]:
        print(f"  {service:<20}" + "".join(f"{t[service]:>13.2f}$" for t in tables))
    totals = [sum(t.values()) for t in tables]
    print(f"  {'total':<20}" + "".join(f"{t:>13.2f}$" for t in totals))
    at_one = totals[1 + FAULT_RATES.index(1.0)]
    verdict = "met" if at_one <= TARGET else "NOT met"
    print(f"  target <= {TARGET:g}$ at 1 fault/100 nodes/day: {verdict}")
    split = bill(base.plus(fix, 1 / 100), fixed, prices)
    print(
        f"  per cluster, whatever its size: {split.fixed:.2f}$ a month (alarms, custom metrics);"
        f" per node at 1 fault/100 nodes/day: {split.per_node:.4f}$ a month"
    )
    print(
        f"  a {SMALL_CLUSTER}-node cluster at 1 fault/100 nodes/day: {split.fixed:.2f}$ + "
        f"{SMALL_CLUSTER} x {split.per_node:.4f}$ = {split.of(SMALL_CLUSTER):.2f}$ a month"
    )
    print(
        f"  per node-day: {base.log_bytes / 1024:.1f} KiB ingested, {base.lambda_requests:.0f} "
        f"invocations, {base.lambda_gb_seconds:.3f} GB-s, {base.write_units:.0f} WRU"
    )
    print(
        f"  per remediation: {fix.transitions:.0f} transitions (runs: "
        f"{', '.join(str(transitions(h)) for h in runs)}), {fix.log_bytes / 1024:.1f} KiB "
        f"logs, {fix.lambda_requests:.0f} invocations, {fix.lambda_gb_seconds:.2f} GB-s, "
        f"{fix.write_units:.0f} WRU, {fix.read_units:.0f} RRU, {fix.sns_publishes:.0f} SNS"
    )
    print(
        f"  fixed: {fixed.custom_metrics} custom metrics, {fixed.standard_alarm_metrics} "
        f"standard alarm metrics, {fixed.insights_metrics_analysed} Metrics Insights metrics "
        f"analysed; logs stored {fixed.retention_days} days at {fixed.compression:.0%} of size"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=2.0, help="of the baseline phase")
    parser.add_argument("--noise-per-minute", type=float, default=30.0, help="while measuring")
    parser.add_argument("--noise-per-day", type=float, default=100.0, help="priced")
    parser.add_argument("--faults", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    progress = copy_of(sys.stderr)
    patterns = subscription_filter_patterns(load_catalog())
    meter = Meter(lambda message: selected(patterns, message))
    templates: list[dict[str, Any]] = []
    synth_template = synth.synth_template

    def captured(settings: Any) -> dict[str, Any]:
        templates.append(synth_template(settings))
        return templates[-1]

    with tempfile.TemporaryDirectory(prefix="nodemedic-cost-") as temporary:
        workdir = args.workdir or Path(temporary)
        print(f"local world in {workdir}", file=progress, flush=True)
        with (
            chatter_to(workdir / "world.log"),
            metering(meter),
            mock.patch.object(synth, "synth_template", captured),
            local_world(workdir, nodes=args.nodes, say=lambda t: print(t, file=progress)) as world,
        ):
            start = meter.counts()
            lines = run_noise(world, args.minutes, args.noise_per_minute)
            noise = diff(meter.counts(), start)
            histories = run_faults(world, args.faults)
            faults = diff(diff(meter.counts(), start), noise)
            fixed = fixed_costs(templates[0], meter, world)
    traced = classifier_traced(templates[0])
    print(f"classify Lambda traced actively: {'yes' if traced else 'no'}", file=progress)
    base = baseline(start, noise, lines, args.noise_per_day, traced)
    report(base, per_remediation(faults, histories, traced), fixed, args.nodes, histories)
    return 0


if __name__ == "__main__":
    sys.exit(main())
