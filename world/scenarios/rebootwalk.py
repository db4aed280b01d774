"""``nodemedic demo --scenario reboot``: what a rebooted p5, g6 and trn1 node goes through
with the chart's defaults and the default image (docs/deploy.md, "A reboot with the
defaults").

The agents run as the chart renders them with its default values (``agent.deepCheckAtStart``
on; the world sets only what it must: ``world.agents.chart_values``, ``extra_args``) and
find on each node only what the default image finds there (``world.image``): none
of the deep check's tools, nvidia-smi from the NVIDIA container runtime on the GPU nodes,
the Neuron driver's sysfs on the trn1. ``post_reboot_deep_check`` and ``deep_check_timeout``
are at their defaults; every other wait is the demo's. The nodes join behind the deep check
and are admitted by it; then, one at a time, each gets a fault whose action is a reboot,
and its timeline is recorded: cordoned, drained, rebooted, back Ready, the deep check's
verdict with each sub-check's, uncordoned. Each must be back in service within
``deep_check_timeout`` of coming back (by its pass, or given back ``Unchecked`` by the
reconcile, which the scenario starts as soon as that time ran out: on AWS its schedule
starts it every ``parking.RECONCILE_SECONDS``), never replaced.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.contracts.kube import (
    AWAITING_DEEP_CHECK_OUTCOME,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_UNCHECKED,
)
from nodemedic.contracts.logs import deep_check_stream, split_signature
from nodemedic.settings import ClusterSettings
from world.scenarios.kit import RECONCILE, XID_48, Result
from world.scenarios.lifewatch import Lifecycle
from world.timeline import Fault, FaultRun
from world.world import Machine, Say, World

WALK: tuple[tuple[str, Fault], ...] = (
    ("p5.48xlarge", Fault("xid", "74", "reboot", "NVLink fatal error (Xid 74)")),
    ("g6.xlarge", XID_48),
    (
        "trn1.32xlarge",
        Fault("rule", "efa-admin-command-timeout", "reboot", "EFA admin command timed out"),
    ),
)
"""Each node's type and its reboot-class fault: three faults of their own, so that no two
make a fleet event of one fault in the group."""
TYPES = tuple(instance_type for instance_type, _ in WALK)
KEPT_AT_DEFAULT = ("post_reboot_deep_check", "deep_check_timeout")
"""The cluster settings the walk keeps at their defaults, over the demo's (which turns the
post-reboot check off: ``world.demo_settings``)."""
STEPS = ("cordoned", "drained", "rebooted", "ready", "verdict", "uncordoned")
GIVEN_BACK = ("Passed", DEEP_CHECK_UNCHECKED)
"""The deep check label of a node back in service: passed, or given back unchecked."""
RECONCILE_EVERY = 10.0
"""Seconds between the reconcile's ticks once ``deep_check_timeout`` ran out (on AWS its
schedule's ``parking.RECONCILE_SECONDS``)."""
RECONCILE_GRACE = 60.0
"""How long the reconcile started once ``deep_check_timeout`` ran out may take to give the
node back (seconds on a busy machine)."""


def default_settings() -> dict[str, Any]:
    """``KEPT_AT_DEFAULT`` with their values in ``ClusterSettings``."""
    fields = {f.name: f for f in dataclasses.fields(ClusterSettings)}
    return {name: fields[name].default for name in KEPT_AT_DEFAULT}


@dataclass
class Walk:
    """One node's reboot: when each step was seen (epoch) and what its deep check said."""

    instance_type: str
    run: FaultRun
    at: dict[str, float] = field(default_factory=dict)
    verdict: str | None = None
    subchecks: dict[str, str] = field(default_factory=dict)
    """Each sub-check's status and reason (a count's: with found/expected), and how many
    devices said so."""
    gate: str | None = None
    """The Node's deep check label once the walk ended."""
    replaced: bool = False

    @property
    def in_service_after(self) -> float | None:
        """Seconds from back Ready to uncordoned."""
        if "ready" not in self.at or "uncordoned" not in self.at:
            return None
        return round(self.at["uncordoned"] - self.at["ready"], 2)

    def to_json(self) -> dict[str, Any]:
        origin = self.run.written_at
        return {
            "instance_type": self.instance_type,
            "node": self.run.machine.node,
            "instance_id": self.run.machine.instance_id,
            "fault": f"{self.run.fault.kind} {self.run.fault.value}",
            "outcome": self.run.outcome,
            "seconds": {s: round(self.at[s] - origin, 2) if s in self.at else None for s in STEPS},
            "in_service_after_ready": self.in_service_after,
            "verdict": self.verdict,
            "subchecks": dict(self.subchecks),
            "gate": self.gate,
            "replaced": self.replaced,
        }


def run_reboot(world: World, say: Say) -> Result:
    """The nodes admitted at join, then each type's reboot in turn: one at a time, so that
    the breaker's share of the group in remediation never holds the next one back."""
    life = Lifecycle(world, say)
    timeout = world.settings.deep_check_timeout
    say("")
    say(
        f"Chart defaults, default image; post_reboot_deep_check "
        f"{world.settings.post_reboot_deep_check}, deep_check_timeout {timeout}s"
    )
    machines = {t: _of_type(world, t) for t in TYPES}
    admitted = life.wait(
        lambda: all(life.admitted(m.instance_id) for m in machines.values()),
        "every node admitted by its deep check at join",
    )
    if admitted:
        say(f"  {', '.join(TYPES)} joined, passed their deep check, schedulable")
    walks = [_walk(life, machines[t], t, fault) for t, fault in WALK]
    result = Result("reboot", life.runs, life.problems)
    result.pacing = {
        "settings": {name: getattr(world.settings, name) for name in KEPT_AT_DEFAULT},
        "walk": [w.to_json() for w in walks],
    }
    return result


def _of_type(world: World, instance_type: str) -> Machine:
    found = [m for m in world.live_machines() if world.type_of(m.instance_id) == instance_type]
    if not found:
        raise RuntimeError(f"the world has no {instance_type} (local_world's types)")
    return found[0]


def _walk(life: Lifecycle, machine: Machine, instance_type: str, fault: Fault) -> Walk:
    world, node = life.world, machine.node
    life.say("")
    life.say(f"{instance_type} {node}")
    run = life.fault(fault, machine)
    walk = Walk(instance_type, run)
    life.expect(
        run.outcome in (AWAITING_DEEP_CHECK_OUTCOME, "rebooted"),
        f"{instance_type}: outcome {run.outcome}, not a reboot held for its deep check",
    )
    for step, seen in (("cordoned", "marked"), ("drained", "drained")):
        if seen in run.steps:
            walk.at[step] = run.steps[seen].at
    rebooted = [e.at for e in world.machine_events(machine.instance_id, "reboot")]
    ready = world.watch.first(
        machine.instance_id,
        run.written_at,
        lambda s: s.event != "DELETED" and s.ready and s.boot_id != run.boot_id,
    )
    if not rebooted or ready is None:
        life.problems.append(f"{instance_type} {node} was not rebooted")
        return walk
    walk.at["rebooted"], walk.at["ready"] = rebooted[-1], ready.at
    life.show(run.written_at, f"back Ready, boot id {ready.boot_id[:8]}", ready.at)
    _back_in_service(life, walk)
    _deep_check(world, walk)
    if walk.verdict is not None:
        life.show(run.written_at, f"deep check {walk.verdict}", walk.at["verdict"])
        for check, said in walk.subchecks.items():
            life.say(f"             {check:<22} {said}")
    if "uncordoned" in walk.at:
        life.show(
            run.written_at, f"uncordoned, {DEEP_CHECK_LABEL}={walk.gate}", walk.at["uncordoned"]
        )
    walk.replaced = bool(world.machine_events(machine.instance_id, "unhealthy")) or (
        world.node(node) is None
    )
    life.expect(not walk.replaced, f"{instance_type} {node} was replaced")
    life.expect(walk.gate in GIVEN_BACK, f"{instance_type} {node} ended {walk.gate}")
    life.expect(walk.verdict != "Failed", f"{instance_type}: deep check Failed {walk.subchecks}")
    return walk


def _back_in_service(life: Lifecycle, walk: Walk) -> None:
    """Wait for the node to be uncordoned: by its pass, else, once ``deep_check_timeout``
    ran out since it came back, by the reconcile's ticks (started here as its schedule
    would start them, every ``RECONCILE_EVERY``: the hold began a few seconds after the
    node came back, and the reconcile counts the wait from the hold)."""
    world, instance_id = life.world, walk.run.machine.instance_id
    timeout = float(world.settings.deep_check_timeout)
    ready = walk.at["ready"]
    tick_at = ready + timeout

    def back() -> float | None:
        nonlocal tick_at
        at = life.schedulable_at(instance_id, ready)
        if at is None and time.time() > tick_at:
            life.run_as_rule(RECONCILE)
            tick_at = time.time() + RECONCILE_EVERY
        return at

    uncordoned = life.wait(
        back, f"{walk.instance_type} back in service", timeout=timeout + RECONCILE_GRACE
    )
    walk.gate = life.labels(instance_id).get(DEEP_CHECK_LABEL)
    if uncordoned is not None:
        walk.at["uncordoned"] = uncordoned
        life.expect(
            uncordoned - ready <= timeout + RECONCILE_GRACE,
            f"{walk.instance_type}: back in service {uncordoned - ready:.0f}s after Ready",
        )


def _deep_check(world: World, walk: Walk) -> None:
    """The verdict and sub-checks of the deep check the node ran after its reboot, as its
    agent shipped them (stream ``<instance-id>/deep-check``)."""
    logs = world.aws("logs")
    try:
        events = logs.filter_log_events(
            logGroupName=world.settings.log_group_name,
            logStreamNames=[deep_check_stream(walk.run.machine.instance_id)],
            startTime=int(walk.at["rebooted"] * 1000),
        )["events"]
    except logs.exceptions.ResourceNotFoundException:
        return
    said: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for event in events:
        try:
            line = json.loads(split_signature(event["message"])[1])
        except ValueError:
            continue
        if line.get("check") == DEEP_CHECK_VERDICT:
            walk.verdict = str(line.get("reason"))
            walk.at["verdict"] = event["ingestionTime"] / 1000
        else:
            said[str(line.get("check"))][_said(line)] += 1
    walk.subchecks = {
        check: ", ".join(f"{what} x{n}" if n > 1 else what for what, n in sorted(counts.items()))
        for check, counts in said.items()
    }


def _said(line: dict[str, Any]) -> str:
    """A sub-check's status and reason, and for a count the devices found of those the
    node's type has (as IMDS names the type)."""
    figures = line.get("figures") or {}
    counted = f" {figures['found']}/{figures['expected']}" if "expected" in figures else ""
    return f"{line.get('status')} {line.get('reason')}{counted}"
