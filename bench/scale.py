"""Quarantine at fleet scale: a KWOK world of 1,500 Nodes in which a share fail at once, each
with its own signed, replace- or reboot-level fault, and how fast the pipeline cordons,
drains and repairs them, under the default breaker and, as the baseline of the same
invocation, with the breaker's limits raised out of the way.

    python -m bench.scale [--nodes 1500] [--failing 150,375] [--burst 1000] [--spread 5]

Each case runs in a fresh process and world (``local_world(kwok=True,
agent_processes=False, lambda_processes=True)``): moto with the synthesized stack and the
Lambdas in warm worker processes, many at once (``world.aws.lambdaworkers``), the
real kube-apiserver whose Nodes and pods KWOK runs (``world.kube.kwok``). No agent process
runs: every node gets one identity (``world.aws.origins``), registered with the identity
document the world's IMDS serves it and sealed under the cluster's origin key, and its
lines are signed with that key and written to its ``<id>/kmsg`` stream with PutLogEvents by a
pool of threads, as its agent would ship them. The cluster enforces proof of origin.

Per failing node: line written (the PutLogEvents call began) → Node cordoned (the watch),
→ drained and → repaired (the decision record's step times: the step after ``draining``,
and ``closed``). The burst writes ``--burst`` distinct faults within 1 s and reports the
time to the last cordon. Distinct faults: each catalog rule that reboots or replaces by one
line, in turn; ``fleet_min_nodes`` is raised to just above what the rotation puts on one
rule, so that the storm is distinct faults and never a fleet event.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.cost import diff
from bench.meter import Meter, metering
from bench.mttr import acting_faults, percentile
from bench.scalefaults import after_storm, by_reason, refusing
from bench.scalereport import report, whole
from bench.scalewriters import SignedWriters, identities
from bench.storm import dead_letter_errors, dead_letters, fault_lines, wait_decided
from console.cli.breaker import status
from console.cli.history import records
from console.cli.remediations import entry
from nodemedic.catalog import load_catalog
from nodemedic.contracts.metrics import AWS_THROTTLED_METRIC, KUBE_REFUSED_METRIC
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from world.aws.quotas import AwsLimits, TokenBucket
from world.kube.kwok import wait_ready_nodes
from world.start import local_world
from world.terminal import chatter_to, copy_of
from world.world import World, demo_settings

RAISED = {
    "max_unhealthy_percent": 100,
    "reboots_per_hour": 10_000,
    "reboots_per_day": 10_000,
    "replacements_per_hour": 10_000,
    "replacements_per_day": 10_000,
}
"""The breaker's rate and share limits out of the way (the baseline); ``max_parallel`` and
``max_in_flight`` are raised to the failing count."""
SETTLE_SECONDS = 240.0
"""How long a case waits after the last fault for its decisions to end; what is still held
or running then is counted as such, not as an error."""


def case_settings(failing: int, raised: bool) -> Any:
    """The demo cluster's, proof of origin enforced, fleet correlation above the rotation."""
    rules = len(acting_faults(load_catalog(), ("reboot", "replace")))
    limits: dict[str, Any] = (
        {**RAISED, "max_parallel": failing, "max_in_flight": failing} if raised else {}
    )
    return demo_settings(
        proof_of_origin="enforce",
        fleet_min_nodes=math.ceil(failing / rules) + 1,
        **limits,
    )


def step_seconds(world: World, began: dict[str, float]) -> dict[str, list[float]]:
    """Line written → drained (the first step after ``draining``) and → closed, per node;
    and → each step the decision records took, under the step's name: where a storm's
    seconds go before the cordon."""
    found: dict[str, list[float]] = {"drained": [], "repaired": []}
    for record in records(world.aws("dynamodb"), world.ledger_table, None):
        written = began.get(str(record.get("instance_id")))
        if written is None:
            continue
        steps = [(s["step"], _epoch(s["at"])) for s in entry(record)["steps"]]
        for name, at in steps:
            found.setdefault(f"step:{name}", []).append(at - written)
        names = [name for name, _ in steps]
        if "draining" in names and names.index("draining") + 1 < len(steps):
            found["drained"].append(steps[names.index("draining") + 1][1] - written)
        if "closed" in names:
            found["repaired"].append(steps[names.index("closed")][1] - written)
    return found


def _epoch(at: Any) -> float:
    return datetime.fromisoformat(str(at).replace("Z", "+00:00")).timestamp()


def spread_of(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "max": None, "n": 0}
    return {
        "p50": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "max": max(values),
        "n": len(values),
    }


def run_case(
    nodes: int,
    failing: int,
    *,
    raised: bool,
    spread: float,
    workdir: Path,
    refuse: int = 0,
    starts: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One case in a fresh world; ``refuse``: the API server refuses the remediator during
    the storm, its first ``refuse`` writes and whatever does not fit its one seat
    (``bench.scalefaults``); ``starts``: Step Functions' ``StartExecution`` bucket and its
    refill a second, AWS's (1,300 and 300) where None (``world.aws.quotas``)."""
    progress = copy_of(sys.stderr)

    def say(text: str) -> None:
        print(text, file=progress, flush=True)

    patterns = subscription_filter_patterns(load_catalog())
    meter = Meter(lambda message: selected(patterns, message))
    settings = case_settings(failing, raised)
    limits = AwsLimits(starts=TokenBucket(*starts)) if starts else AwsLimits()
    began_world = time.monotonic()
    with (
        chatter_to(workdir / "world.log"),
        metering(meter),
        local_world(
            workdir,
            settings=settings,
            nodes=nodes,
            agent_processes=False,
            kwok=True,
            lambda_processes=True,
            aws_limits=limits,
            say=say,
        ) as world,
    ):
        instance_ids = sorted(world.machines)
        names = {world.machines[i].node for i in instance_ids}
        ready_s = wait_ready_nodes(world.api, names, timeout=600)
        world_s = time.monotonic() - began_world
        say(f"scale: {nodes} Nodes Ready (KWOK) {ready_s:.1f}s after the world, {world_s:.0f}s")
        writers = SignedWriters(world)
        writers.create(instance_ids)
        t0 = time.monotonic()
        nodes_identities = identities(world, instance_ids)
        sealed_s = time.monotonic() - t0
        t0 = time.monotonic()
        writers.register(nodes_identities)
        registered_s = time.monotonic() - t0
        say(f"scale: identities sealed in {sealed_s:.1f}s, registered in {registered_s:.1f}s")
        before = meter.counts()
        stormed = random.sample(nodes_identities, failing)
        lines = fault_lines(failing, True, settings)
        storm_began = time.time()
        t0 = time.monotonic()
        with refusing(world, refuse) as webhook:
            writers.signed_faults(stormed, lines, spread)
            written_s = time.monotonic() - t0
            say(f"scale: {failing} signed faults written in {written_s:.1f}s")
            waited, statuses = wait_decided(world, failing, SETTLE_SECONDS)
        used = diff(meter.counts(), before)
        checked = after_storm(world, storm_began)
        cordon = [
            seen.at - writers.began[n.instance_id]
            for n in stormed
            if (
                seen := world.watch.first(
                    n.instance_id, writers.began[n.instance_id], lambda s: s.unschedulable
                )
            )
        ]
        cordoned_at = [s.at for s in world.watch.seen if s.at >= storm_began and s.unschedulable]
        steps = step_seconds(world, writers.began)
        breaker = status(world.aws("dynamodb"), world.ledger_table, settings.name, int(time.time()))
        stormed_nodes = len(stormed)
        dead = dead_letters(world)
        sfn_calls = sum(v for k, v in used.items() if k.startswith("call:stepfunctions:"))
        lambda_calls = used["lambda:delivery"] + used["lambda:filtered"] + used["lambda:invocation"]
        return {
            "nodes": nodes,
            "failing": failing,
            "breaker": "raised" if raised else "default",
            "spread_s": spread,
            "world_s": world_s,
            "kwok_ready_s": ready_s,
            "identities_sealed_s": sealed_s,
            "registrations_written_s": registered_s,
            "faults_written_s": written_s,
            "cordon": spread_of(cordon),
            "drained": spread_of(steps["drained"]),
            "repaired": spread_of(steps["repaired"]),
            "steps_p50": {
                name.removeprefix("step:"): percentile(values, 0.5)
                for name, values in steps.items()
                if name.startswith("step:")
            },
            "last_cordon_s": (max(cordoned_at) - storm_began) if cordoned_at else None,
            "cordoned": len(cordon),
            "decided_s": written_s + waited,
            "statuses": dict(statuses),
            "executions_failed": statuses.get("FAILED", 0) + statuses.get("TIMED_OUT", 0),
            "errors": len(writers.failures) + dead,
            "dead_letters": dead,
            "dead_letter_errors": dead_letter_errors(world),
            "failures": writers.failures[:5],
            "breaker_state": breaker["state"],
            "lambda_per_node": lambda_calls / stormed_nodes,
            "stepfunctions_calls_per_node": sfn_calls / stormed_nodes,
            "fault_put": spread_of(writers.fault_puts),
            # Lambda seconds per second of the storm: the workers' mean concurrency.
            "lambda_busy": sum(v for k, v in used.items() if k.startswith("seconds:"))
            / (written_s + waited),
            "outcomes": dict(Counter(m.outcome for m in world.inbox.messages())),
            "refused_writes": webhook.refused if webhook else 0,
            "kube_refused": by_reason(world, KUBE_REFUSED_METRIC),
            "starts_throttled": limits.starts.throttled,
            "aws_throttled": by_reason(world, AWS_THROTTLED_METRIC),
            "deliveries_failed": limits.deliveries.failed,
            **checked,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--failing", default="150,375", help="failing counts, comma-separated")
    parser.add_argument(
        "--burst", type=int, default=1000, help="distinct faults within 1 s (0: none)"
    )
    parser.add_argument("--spread", type=float, default=5.0, help="seconds the faults arrive over")
    parser.add_argument(
        "--refuse",
        type=int,
        default=0,
        help="the API server refuses the remediator's first N writes",
    )
    parser.add_argument(
        "--starts",
        help="Step Functions' StartExecution bucket and its refill a second, as SIZE,REFILL "
        "(AWS's: 1300,300)",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, as JSON
    args = parser.parse_args()
    if args.case:
        case = json.loads(args.case)
        with tempfile.TemporaryDirectory(prefix="nodemedic-scale-") as workdir:
            print(json.dumps(run_case(**case, workdir=Path(workdir))))
        return 0
    starts = [float(x) for x in args.starts.split(",")] if args.starts else None
    cases = [
        {
            "nodes": args.nodes,
            "failing": f,
            "raised": raised,
            "spread": args.spread,
            "refuse": args.refuse,
            "starts": starts,
        }
        for f in (int(x) for x in args.failing.split(","))
        for raised in (True, False)
    ]
    if args.burst:
        cases.append(
            {
                "nodes": args.nodes,
                "failing": args.burst,
                "raised": False,
                "spread": 1.0,
                "refuse": args.refuse,
                "starts": starts,
            }
        )
    results, failed = [], []
    for case in cases:
        child = subprocess.run(
            [sys.executable, "-m", "bench.scale", f"--case={json.dumps(case)}"],
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
        # moto may print after the figures while the world's threads end.
        printed = [line for line in child.stdout.splitlines() if line.startswith("{")]
        if child.returncode != 0 or not printed:  # the other cases' figures still count
            failed.append(f"{case}: exit {child.returncode}")
            continue
        results.append(json.loads(printed[-1]))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    report(results)
    for case in failed:
        print(f"  case failed: {case}")
    return 0 if not failed and all(whole(r) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
