"""The ``storm`` scenario: 60 % of the nodes report the same fatal fault at once, a fleet
event (hardware does not fail in lockstep). The sighting that makes it one declares it, so
at most the first ``fleet_min_nodes`` - 1 are cordoned, none is rebooted or replaced, every
one is given back marked, and one mail lists them all; the breaker, sampled from the ledger
throughout, never lets more than its limit in at once."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor

from nodemedic.contracts.ledger import BREAKER_SK, group_pk
from nodemedic.remediate.ledger import admission_limit
from world.observe import Observer, follow
from world.scenarios.kit import BreakerView, Result, targets
from world.scenarios.verdict import verdict_line, verify
from world.timeline import Fault, FaultRun, format_step, inject
from world.world import NODE_GROUP, Machine, Say, World

STORM_FAULT = Fault("neuron", "DMA_ERROR", "fleet", "Neuron DMA error")
STORM_SHARE = 0.6
STORM_TIMEOUT = 150.0
STORM_SETTLE = 30
"""The storm's ``fleet_settle`` (the demo's other scenarios settle in 6 s): the declarer's
mail lists the nodes sighted by then. The five lines are shipped within 1.3 s, but one
world classifies them one batch after another: at load average 10 on two cores, 1.9 s to
14.4 s after they were written. A real cluster classifies its nodes' batches side by side,
well within the default 60 s."""


def run_storm(world: World, say: Say) -> Result:
    observer = Observer(world)
    size = len(world.live_machines())
    count = math.ceil(size * STORM_SHARE)
    chosen = targets(world, count)
    settings = world.settings
    limit = admission_limit(size, settings.max_unhealthy_percent, settings.max_parallel)
    breaker = BreakerView(limit)
    say("")
    say(
        f"Storm: {count} of {size} nodes report '{STORM_FAULT.title}' at once; "
        f"breaker limit {limit} (max_parallel {settings.max_parallel}, "
        f"max_unhealthy_percent {settings.max_unhealthy_percent})"
    )
    runs = _inject_together(world, chosen, STORM_FAULT)
    began = min(r.written_at for r in runs)
    ddb = world.aws("dynamodb")

    def show(run: FaultRun, step: str) -> None:
        say(f"  {run.machine.node:<28} " + format_step(run, step, since=began))

    def sample() -> None:
        item = ddb.get_item(
            TableName=world.ledger_table,
            Key={"pk": {"S": group_pk(NODE_GROUP)}, "sk": {"S": BREAKER_SK}},
            ConsistentRead=True,
        ).get("Item", {})
        holders = tuple(sorted(item.get("holders", {}).get("SS", [])))
        if not breaker.samples or breaker.samples[-1][1] != holders:
            nodes = [world.machines[i].node for i in holders if i in world.machines]
            say(
                f"  {'breaker':<28} +{time.time() - began:6.2f}s  in remediation "
                f"{len(holders)}/{limit}: {', '.join(nodes) or '-'}"
            )
        breaker.samples.append((time.time(), holders))

    follow(observer, runs, show, timeout=STORM_TIMEOUT, tick=sample)
    result = Result("storm", runs, breaker=breaker)
    result.held = sorted(
        {n.instance_id or "" for n in world.inbox.messages() if n.outcome == "held"} - {""}
    )
    result.most_out_at_once = _most_out_at_once(world, runs)
    for run in runs:
        verify(world, run)
    if breaker.most > limit:
        result.problems.append(f"breaker let {breaker.most} in at once (limit {limit})")
    if result.most_out_at_once > limit:
        result.problems.append(f"{result.most_out_at_once} nodes were out at once (limit {limit})")
    first = world.settings.fleet_min_nodes - 1
    if result.most_out_at_once > first:
        result.problems.append(
            f"{result.most_out_at_once} nodes were out at once: a fleet event lets at most its "
            f"first {first} sightings be cordoned"
        )
    result.fleet_mail = [
        sorted(m.body.get("nodes") or []) for m in world.inbox.messages() if m.outcome == "fleet"
    ]
    if result.fleet_mail != [sorted(r.machine.instance_id for r in runs)]:
        result.problems.append(
            f"fleet event mails {result.fleet_mail}: one listing all, expected; "
            f"classified (fleet_settle {settings.fleet_settle} s): {_classified(runs, began)}"
        )
    say("")
    say(
        f"  => breaker: at most {breaker.most} in remediation (limit {limit}), at most "
        f"{result.most_out_at_once} nodes out at once, {len(result.held)} held by it; "
        f"{len(result.fleet_mail)} fleet event mail(s)"
    )
    for run in runs:
        say(f"  => {run.machine.node}: {verdict_line(run)}")
    return result


def _classified(runs: list[FaultRun], began: float) -> str:
    """When each node's line was classified, after the first was written: a node the mail
    missed was sighted after the window settled."""
    seen = sorted(
        (r.steps["classified"].at - began, r.machine.instance_id)
        for r in runs
        if "classified" in r.steps
    )
    never = [r.machine.instance_id for r in runs if "classified" not in r.steps]
    return ", ".join([f"{i} +{at:.1f}s" for at, i in seen] + [f"{i} never" for i in never])


def _inject_together(world: World, machines: list[Machine], fault: Fault) -> list[FaultRun]:
    with ThreadPoolExecutor(max_workers=len(machines)) as pool:
        runs = pool.map(lambda m: inject(world, m, fault), machines)
    return list(runs)  # once the pool's threads have ended (see world.start.local_world)


def _most_out_at_once(world: World, runs: list[FaultRun]) -> int:
    """Intervals from a node's cordon to its deletion or uncordon, from the Node watch; the
    most that overlap."""
    edges: list[tuple[float, int]] = []
    for run in runs:
        history = world.watch.history(run.machine.instance_id, run.written_at)
        out = next((s.at for s in history if s.unschedulable), None)
        if out is None:
            continue
        back = next(
            (
                s.at
                for s in history
                if s.at >= out and (s.event == "DELETED" or not s.unschedulable)
            ),
            time.time(),
        )
        edges += [(out, 1), (back, -1)]
    most = current = 0
    for _, change in sorted(edges):
        current += change
        most = max(most, current)
    return most
