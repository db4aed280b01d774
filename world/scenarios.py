"""The demo's scenarios: which faults go to which nodes, and what must have come of each,
checked on the final state of the cluster and of AWS.

``default``: four lines, one after the other, each on its own node: a Neuron DMA error
(replace), an Xid 48 (reboot with a new boot id), a benign driver line (nothing) and an
Xid 13 (notify only). ``storm``: 60 % of the nodes report the same fatal fault at once:
a fleet event (hardware does not fail in lockstep). The sighting that makes it one
declares it, so at most the first ``fleet_min_nodes`` - 1 are cordoned, none is rebooted or
replaced, every one is given back marked, and one mail lists them all. ``spread``: fatal
faults one after another, one more than the hourly replacement limit, then a reboot: the
limit trips the cluster's breaker (``world.spread``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nodemedic.contracts.kube import FLEET_LABEL, HEALTH_LABEL, TAINT_KEY
from nodemedic.contracts.ledger import BREAKER_SK, DECISION_SK_PREFIX, group_pk
from nodemedic.remediate.fleet import OUTCOME as FLEET_OUTCOME
from nodemedic.remediate.ledger import admission_limit
from world.observe import Observer, follow
from world.timeline import Fault, FaultRun, format_step, inject
from world.world import NODE_GROUP, Machine, World

Say = Callable[[str], None]
DMA_ERROR = Fault("neuron", "DMA_ERROR", "replace", "Neuron DMA engine error")
DEFAULT = (
    DMA_ERROR,
    Fault("xid", "48", "reboot", "GPU uncorrectable double-bit ECC error (Xid 48)"),
    Fault("xid", "162", "nothing", "benign driver line: power smoothing re-engaged (Xid 162)"),
    Fault("xid", "13", "notify", "application fault: graphics exception (Xid 13)"),
)
STORM_FAULT = Fault("neuron", "DMA_ERROR", "fleet", "Neuron DMA error")
STORM_SHARE = 0.6
FAULT_TIMEOUT = 60.0
STORM_TIMEOUT = 150.0


@dataclass
class BreakerView:
    """The breaker as the ledger shows it, sampled while the storm runs."""

    limit: int
    samples: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)

    @property
    def most(self) -> int:
        return max((len(h) for _, h in self.samples), default=0)

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "most_in_remediation": self.most}


@dataclass
class Result:
    scenario: str
    runs: list[FaultRun]
    problems: list[str] = field(default_factory=list)
    breaker: BreakerView | None = None
    most_out_at_once: int | None = None
    """Storm: the most nodes cordoned and not yet replaced at one time (Node watch)."""
    held: list[str] = field(default_factory=list)
    """Storm: instances whose decision the breaker held."""
    pacing: dict[str, Any] | None = None
    """Spread: the settings shown, the breaker's states as they changed, its pages."""
    fleet_mail: list[list[str]] = field(default_factory=list)
    """Storm: the nodes each fleet event mail listed (one mail is right)."""
    jobs: Any = None
    """Jobs: what came of each training job (``jobscenario.JobsView``)."""

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.ok for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "scenario": self.scenario,
            "ok": self.ok,
            "problems": list(self.problems),
            "faults": [r.to_json() for r in self.runs],
        }
        if self.breaker is not None:
            found["breaker"] = {
                **self.breaker.to_json(),
                "most_out_at_once": self.most_out_at_once,
                "held": list(self.held),
            }
            found["fleet_mail"] = [list(nodes) for nodes in self.fleet_mail]
        if self.pacing is not None:
            found["pacing"] = self.pacing
        if self.jobs is not None:
            found["jobs"] = self.jobs.to_json()
        return found


def targets(world: World, count: int) -> list[Machine]:
    """``count`` healthy machines, those running training workers first, in node order."""
    workers = world.job.nodes_running_workers()
    healthy = [m for m in world.live_machines() if _healthy(world, m)]
    healthy.sort(key=lambda m: (m.node not in workers, m.node))
    if len(healthy) < count:
        raise RuntimeError(f"{count} healthy nodes needed, {len(healthy)} available")
    return healthy[:count]


def _healthy(world: World, machine: Machine) -> bool:
    seen = world.watch.latest(machine.instance_id)
    return (
        seen is not None
        and seen.event != "DELETED"
        and seen.ready
        and not seen.unschedulable
        and not seen.tainted
    )


def run_default(world: World, say: Say) -> Result:
    observer = Observer(world)
    runs = []
    for fault, machine in zip(DEFAULT, targets(world, len(DEFAULT)), strict=True):
        say("")
        say(f"{fault.title} on {machine.node} ({machine.instance_id}); expect: {fault.expect}")
        run = inject(world, machine, fault)
        runs.append(run)
        follow(
            observer,
            [run],
            lambda r, step: say("  " + format_step(r, step)),
            timeout=FAULT_TIMEOUT,
        )
        verify(world, run)
        say(f"  => {verdict_line(run)}")
    return Result("default", runs)


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
        result.problems.append(f"fleet event mails {result.fleet_mail}: one listing all, expected")
    say("")
    say(
        f"  => breaker: at most {breaker.most} in remediation (limit {limit}), at most "
        f"{result.most_out_at_once} nodes out at once, {len(result.held)} held by it; "
        f"{len(result.fleet_mail)} fleet event mail(s)"
    )
    for run in runs:
        say(f"  => {run.machine.node}: {verdict_line(run)}")
    return result


def run_spread(world: World, say: Say) -> Result:
    """``world.spread``, imported here because it builds on this module."""
    from world.spread import run_spread as spread

    return spread(world, say)


def run_jobs(world: World, say: Say) -> Result:
    """``world.jobscenario``, imported here because it builds on this module."""
    from world.jobscenario import run_jobs as jobs

    return jobs(world, say)


def run_lifecycle(world: World, say: Say) -> Result:
    """``world.lifecycle``, imported here because it builds on this module."""
    from world.lifecycle import run_lifecycle as lifecycle

    return lifecycle(world, say)


SCENARIOS: dict[str, Callable[[World, Say], Result]] = {
    "default": run_default,
    "storm": run_storm,
    "spread": run_spread,
    "jobs": run_jobs,
    "lifecycle": run_lifecycle,
}
SETTINGS: dict[str, dict[str, Any]] = {
    "spread": {"breaker_cooldown": 12, "breaker_hold": 3},
    "jobs": {"job_monitoring": True, "job_restarts_per_window": 12},
    "lifecycle": {
        "post_reboot_deep_check": True,
        "spares": ((NODE_GROUP, 1),),
        "deep_check_timeout": 8,
        "replacements_per_hour": 10,
        "replacements_per_day": 20,
    },
}
"""A scenario's cluster settings over ``world.demo_settings``: the spread's breaker holds and
cools down for seconds, not an hour and half an hour, so that the demo shows it recover; the
jobs scenario makes eight restarts and a failure within two minutes on purpose, more than the
job breaker lets through in a real cluster's window (three). The lifecycle gates every
rebooted node on its deep check, keeps one spare, calls a deep check overdue after 8 s (not
15 minutes) and has room for its five replaces."""
LAUNCH_SECONDS = 6.0
"""The lifecycle's simulated EC2 launch plus EKS join, from ``Unhealthy`` to the
replacement's Node joining: a stand-in for the minutes they take on AWS (docs/deploy.md,
"Spares"), so that what a spare saves shows."""
WORLDS: dict[str, dict[str, Any]] = {
    "lifecycle": {"deep_checks": True, "launch_seconds": LAUNCH_SECONDS},
}
"""A scenario's ``local_world`` options: the lifecycle's nodes join behind the health-check
taint and run the deep check at start."""


def _inject_together(world: World, machines: list[Machine], fault: Fault) -> list[FaultRun]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(machines)) as pool:
        return list(pool.map(lambda m: inject(world, m, fault), machines))


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


def verdict_line(run: FaultRun) -> str:
    outcome = run.outcome or ("nothing" if run.fault.expect == "nothing" else "none")
    if run.ok:
        return f"OK: {outcome} (expected {run.fault.expect})"
    return f"FAILED: {outcome} (expected {run.fault.expect}): " + "; ".join(run.problems)


# Checks on the final state ----------------------------------------------------------------

_OUTCOMES = {
    "replace": "replaced",
    "reboot": "rebooted",
    "notify": "notified",
    "held": "held",
    "fleet": FLEET_OUTCOME,
}


def verify(world: World, run: FaultRun) -> None:
    """Add to ``run.problems`` whatever the world's final state says went wrong."""
    problems = run.problems
    expected = _OUTCOMES.get(run.fault.expect)
    if expected is not None and run.outcome != expected:
        problems.append(f"notification says {run.outcome!r}, expected {expected!r}")
    check = {
        "replace": _replaced,
        "reboot": _rebooted,
        "notify": _untouched,
        "held": _untouched,
        "nothing": _nothing,
        "fleet": _given_back,
    }[run.fault.expect]
    problems += check(world, run)


def _replaced(world: World, run: FaultRun) -> list[str]:
    problems = []
    instance_id, name = run.machine.instance_id, run.machine.node
    if world.node(name) is not None:
        problems.append(f"node {name} still exists")
    found = world.aws("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance_id])
    for instance in found["AutoScalingInstances"]:
        if instance["HealthStatus"].upper() != "UNHEALTHY":
            problems.append(f"{instance_id} is {instance['HealthStatus']} in its group")
    if not world.machine_events(instance_id, "unhealthy"):
        problems.append(f"{instance_id} was never set Unhealthy")
    state = world.instance_state(instance_id)
    if state not in ("shutting-down", "terminated"):
        problems.append(f"{instance_id} is {state}, not terminated")
    if name in world.job.nodes_running_workers():
        problems.append(f"a training worker still runs on {name}")
    return problems


def _rebooted(world: World, run: FaultRun) -> list[str]:
    instance_id, name = run.machine.instance_id, run.machine.node
    problems = []
    if not world.machine_events(instance_id, "reboot"):
        problems.append(f"{instance_id} was never rebooted")
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    if node.status.node_info.boot_id == run.boot_id:
        problems.append(f"{name} still has boot id {run.boot_id}")
    if node.spec.unschedulable:
        problems.append(f"{name} is still cordoned")
    if any(t.key == TAINT_KEY for t in node.spec.taints or []):
        problems.append(f"{name} still has the {TAINT_KEY} taint")
    label = (node.metadata.labels or {}).get(HEALTH_LABEL)
    if label != "Schedulable":
        problems.append(f"{name} is labelled {HEALTH_LABEL}={label}")
    if world.instance_state(instance_id) != "running":
        problems.append(f"{instance_id} is not running")
    return problems


def _given_back(world: World, run: FaultRun) -> list[str]:
    """Held for a fleet event: neither rebooted nor replaced, back in service, marked."""
    instance_id, name = run.machine.instance_id, run.machine.node
    problems = []
    for event in ("reboot", "unhealthy"):
        if world.machine_events(instance_id, event):
            problems.append(f"{instance_id} had a {event}")
    if world.instance_state(instance_id) != "running":
        problems.append(f"{instance_id} is not running")
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    if node.spec.unschedulable:
        problems.append(f"{name} is still cordoned")
    if any(t.key == TAINT_KEY for t in node.spec.taints or []):
        problems.append(f"{name} still has the {TAINT_KEY} taint")
    if (node.metadata.labels or {}).get(FLEET_LABEL) != run.rule:
        problems.append(f"{name} has no {FLEET_LABEL}={run.rule} label")
    return problems


def _untouched(world: World, run: FaultRun) -> list[str]:
    """The node was never cordoned, tainted or labelled unschedulable."""
    name = run.machine.node
    problems = []
    if world.watch.first(run.machine.instance_id, run.written_at, _out) is not None:
        problems.append(f"{name} was cordoned or tainted")
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    label = (node.metadata.labels or {}).get(HEALTH_LABEL)
    if label not in (None, "Schedulable"):
        problems.append(f"{name} is labelled {HEALTH_LABEL}={label}")
    if world.machine_events(run.machine.instance_id, "reboot"):
        problems.append(f"{run.machine.instance_id} was rebooted")
    return problems


def _nothing(world: World, run: FaultRun) -> list[str]:
    problems = _untouched(world, run)
    if run.decision_id is not None:
        problems.append(f"a remediation was started: {run.decision_id}")
    mail = [m for m in world.inbox.about(run.machine.instance_id) if m.sent_at >= run.written_at]
    if mail:
        problems.append(f"a notification was sent: {mail[0].subject}")
    ledger = world.aws("dynamodb").query(
        TableName=world.ledger_table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :decision)",
        ExpressionAttributeValues={
            ":pk": {"S": run.machine.instance_id},
            ":decision": {"S": DECISION_SK_PREFIX},
        },
    )["Items"]
    if ledger:
        problems.append(f"the ledger has {len(ledger)} decision(s) for the node")
    return problems


def _out(seen: Any) -> bool:
    return bool(seen.unschedulable or seen.tainted)
