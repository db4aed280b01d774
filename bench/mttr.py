"""Time to remediate in the local world: faults injected one after another, each through the
whole pipeline (agent → CloudWatch Logs → subscription → classifier → Step Functions →
kube Lambda → Auto Scaling), timed by what the world recorded (``world.timeline``).

Each node gets a different fault, taken in turn from the catalog's replacing rules: hardware
fails one fault at a time, and the same fault on ``fleet_min_nodes`` nodes within
``fleet_window`` is a fleet event, which is held, not replaced (``bench/storm.py`` measures
that). Every replacement waits out ``fleet_settle`` before it acts, and the figures say so.

Prints p50/p99 of line written → node cordoned and line written → Auto Scaling instance
Unhealthy, and the share of the latter spent in each stage. The baseline, measured in the
same run: the same decision started directly on the state machine (no agent, no Logs, no
classifier) → node cordoned, which is what detection adds to.

    python -m bench.mttr [--faults 20] [--baseline 5] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nodemedic.catalog import Catalog, load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.remediate.recorded import marker
from world.observe import Observer, follow
from world.start import local_world
from world.terminal import chatter_to, copy_of
from world.timeline import Fault, FaultRun, inject
from world.world import Machine, World, demo_settings

TARGET_P50, TARGET_P99 = 2.0, 5.0
WAIT = 60.0
"""Seconds the bench waits for an execution to end or a node to be cordoned: a stall fails
the run rather than hanging it."""
SETTLED = 5.0
"""Seconds a replacement's agent gets to start before a fault goes to its node."""
STAGES = (
    ("written", "shipped", "agent batch + PutLogEvents"),
    ("shipped", "classified", "subscription delivery + classifier"),
    ("classified", "started", "classifier starts the execution"),
    ("started", "cordoned", "plan, lock, breaker, locate, mark"),
    ("cordoned", "drained", "drain (Eviction API)"),
    ("drained", "unhealthy", "fleet settle + SetInstanceHealth"),
)


def acting_faults(catalog: Catalog, actions: tuple[str, ...] = ("replace",)) -> tuple[Fault, ...]:
    """Every kernel-line rule whose one line gets one of ``actions``, injected by its rule
    id: rules counted over a window (``threshold``) need more than one line, and a rule
    whose example another rule claims first cannot be injected as itself."""
    classifier = Classifier(catalog)
    return tuple(
        Fault("rule", rule.id, rule.action, rule.summary)
        for rule in catalog.rules
        if rule.source == "kmsg"
        and rule.action in actions
        and rule.threshold is None
        and rule.example
        and (found := classifier.classify(rule.example)) is not None
        and found.fault_id == rule.id
    )


def rotation(faults: tuple[Fault, ...], count: int, settings: Any) -> list[Fault]:
    """``count`` faults in turn; refused where the rotation is so short that one fault would
    reach ``fleet_min_nodes`` nodes and be held as a fleet event, not measured."""
    if count >= len(faults) * (settings.fleet_min_nodes - 1) + 1:
        raise ValueError(
            f"{count} faults from {len(faults)} distinct ones repeat one on "
            f"{settings.fleet_min_nodes} nodes: a fleet event, not a replacement"
        )
    return [faults[index % len(faults)] for index in range(count)]


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least ``share`` of the values at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def next_machine(world: World, used: set[str]) -> Machine:
    """A healthy machine not faulted yet, the longest-running first; a fresh replacement
    only once its agent has had time to start."""
    launched = {e.instance_id: e.at for e in world.events if e.kind == "launched"}
    while True:
        for machine in sorted(world.live_machines(), key=lambda m: launched.get(m.instance_id, 0)):
            seen = world.watch.latest(machine.instance_id)
            if (
                machine.instance_id not in used
                and seen is not None
                and seen.ready
                and not seen.unschedulable
                and time.time() - launched.get(machine.instance_id, 0) > SETTLED
            ):
                return machine
        time.sleep(0.2)


def cordoned_at(world: World, run: FaultRun) -> float | None:
    seen = world.watch.first(run.machine.instance_id, run.written_at, lambda s: s.unschedulable)
    return None if seen is None else seen.at


def measure(
    world: World, faults: list[Fault], say: Callable[[str], None]
) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """The samples (seconds from the line written, by step) and the last decision record."""
    observer = Observer(world)
    used: set[str] = set()
    samples = []
    for number, fault in enumerate(faults, start=1):
        machine = next_machine(world, used)
        used.add(machine.instance_id)
        run = inject(world, machine, fault)
        follow(observer, [run], lambda r, s: None, timeout=60)
        cordoned = cordoned_at(world, run)
        if run.problems or cordoned is None:
            raise RuntimeError(f"fault {number} on {machine.node}: {run.problems}")
        times = {step: found.at for step, found in run.steps.items()}
        times["cordoned"] = cordoned
        times["unhealthy"] = times["acted"]
        samples.append({k: v - run.written_at for k, v in times.items()})
        say(
            f"  fault {number:2d} {fault.value:<32} on {machine.node:<31} "
            f"cordoned +{samples[-1]['cordoned']:.2f}s"
            f"  Unhealthy +{samples[-1]['unhealthy']:.2f}s"
        )
        # The next fault starts when this execution has ended (slot and lock released).
        execution = finished_execution(observer.sfn, observer.execution_arn(run) or "")
    return samples, json.loads(execution["input"])


def finished_execution(sfn: Any, arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while (found := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        if time.monotonic() > deadline:
            raise RuntimeError(f"execution {arn} still running after {WAIT:g}s")
        time.sleep(0.2)
    result: dict[str, Any] = found
    return result


def baseline(world: World, template: dict[str, Any], count: int) -> list[float]:
    """Decision started directly → node cordoned, on fresh nodes."""
    sfn, dynamodb = world.aws("stepfunctions"), world.aws("dynamodb")
    used: set[str] = set()
    found = []
    for _ in range(count):
        machine = next_machine(world, used)
        used.add(machine.instance_id)
        decision_id = f"{machine.instance_id}-bench-{uuid.uuid4().hex[:8]}"
        record = {
            **template,
            "decision_id": decision_id,
            "instance_id": machine.instance_id,
            "first_seen": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        began = time.time()
        # Recorded as the classifier records its starts: the state machine refuses the rest.
        dynamodb.put_item(TableName=world.ledger_table, Item=marker(record, starts_at=began))
        arn = sfn.start_execution(
            stateMachineArn=world.state_machine_arn, name=decision_id, input=json.dumps(record)
        )["executionArn"]
        while (
            seen := world.watch.first(machine.instance_id, began, lambda s: s.unschedulable)
        ) is None:
            if time.time() - began > WAIT:
                raise RuntimeError(f"baseline: {machine.node} not cordoned after {WAIT:g}s")
            time.sleep(0.05)
        found.append(seen.at - began)
        finished_execution(sfn, arn)
    return found


def report(samples: list[dict[str, float]], base: list[float], distinct: int, settle: int) -> None:
    print(
        f"MTTR in the local world: {len(samples)} faults ({distinct} distinct, from the "
        "catalog's replacing rules) -> replace, one node at a time"
    )
    print(f"  each replacement waits out fleet_settle ({settle}s) after its first sighting")
    print(f"  {'':<34} {'p50':>7} {'p99':>7} {'max':>7}")
    for key, name in (
        ("cordoned", "line written -> node cordoned"),
        ("unhealthy", "line written -> ASG Unhealthy"),
    ):
        values = [s[key] for s in samples]
        print(
            f"  {name:<34} {percentile(values, 0.5):6.2f}s {percentile(values, 0.99):6.2f}s "
            f"{max(values):6.2f}s"
        )
    for key in ("cordoned", "unhealthy"):
        values = [s[key] for s in samples]
        met = percentile(values, 0.5) <= TARGET_P50 and percentile(values, 0.99) <= TARGET_P99
        print(
            f"  target for line written -> {key}: p50 <= {TARGET_P50:g}s, "
            f"p99 <= {TARGET_P99:g}s: {'met' if met else 'NOT met'}"
        )
    cordoned = [s["cordoned"] for s in samples]
    total = statistics.mean(s["unhealthy"] for s in samples)
    print(f"  share of line written -> ASG Unhealthy (mean {total:.2f}s) by stage:")
    for start, end, name in STAGES:
        spent = statistics.mean(s[end] - s.get(start, 0.0) for s in samples)
        print(f"    {start + ' -> ' + end:<24} {name:<36} {spent:6.2f}s {spent / total:6.1%}")
    if base:
        ratio = percentile(cordoned, 0.5) / percentile(base, 0.5)
        print(
            f"  baseline, decision started directly -> cordoned ({len(base)} runs): "
            f"p50 {percentile(base, 0.5):.2f}s; end to end is {ratio:.2f}x the baseline"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--baseline", type=int, default=5)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()

    progress = copy_of(sys.stderr)

    def say(text: str) -> None:
        print(text, file=progress, flush=True)

    settings = demo_settings()
    faults = rotation(acting_faults(load_catalog()), args.faults, settings)
    with tempfile.TemporaryDirectory(prefix="nodemedic-bench-") as temporary:
        workdir = args.workdir or Path(temporary)
        say(f"local world in {workdir}; what its parts print: {workdir / 'world.log'}")
        with (
            chatter_to(workdir / "world.log"),
            local_world(workdir, settings=settings, say=say) as world,
        ):
            samples, template = measure(world, faults, say)
            base = baseline(world, template, args.baseline)
    report(samples, base, len(set(faults)), settings.fleet_settle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
