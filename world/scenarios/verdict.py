"""What must have come of each fault a scenario injected, checked on the final state of the
cluster and of AWS, and the one line that says so."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from nodemedic.contracts.kube import FLEET_LABEL, HEALTH_LABEL, TAINT_KEY
from nodemedic.contracts.ledger import DECISION_SK_PREFIX
from nodemedic.remediate.fleet import OUTCOME as FLEET_OUTCOME
from world.observe import Observer, follow
from world.scenarios.kit import FAULT_TIMEOUT, targets
from world.timeline import Fault, FaultRun, format_step, inject
from world.world import Say, World


def verdict_line(run: FaultRun) -> str:
    outcome = run.outcome or ("nothing" if run.fault.expect == "nothing" else "none")
    if run.ok:
        return f"OK: {outcome} (expected {run.fault.expect})"
    return f"FAILED: {outcome} (expected {run.fault.expect}): " + "; ".join(run.problems)


_OUTCOMES = {
    "replace": "replaced",
    "reboot": "rebooted",
    "reset": "reset",
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
        "reset": _reset,
        "notify": _untouched,
        "held": _held,
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
    return problems + _in_service(world, run, node)


def _reset(world: World, run: FaultRun) -> list[str]:
    """Its GPU reset through SSM and verified: the node given back at the same boot."""
    instance_id, name = run.machine.instance_id, run.machine.node
    problems = _neither_rebooted_nor_replaced(world, instance_id)
    ran = [status for i, status in world.gpus.resets if i == instance_id]
    if ran != ["Success"]:
        problems.append(f"the GPU reset commands on {instance_id} ended {ran}, not one Success")
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    if node.status.node_info.boot_id != run.boot_id:
        problems.append(f"{name} has boot id {node.status.node_info.boot_id}, not {run.boot_id}")
    return problems + _in_service(world, run, node)


def _in_service(world: World, run: FaultRun, node: client.V1Node) -> list[str]:
    """Uncordoned, untainted, labelled schedulable, its instance running."""
    name = run.machine.node
    problems = _unmarked(node)
    label = (node.metadata.labels or {}).get(HEALTH_LABEL)
    if label != "Schedulable":
        problems.append(f"{name} is labelled {HEALTH_LABEL}={label}")
    if world.instance_state(run.machine.instance_id) != "running":
        problems.append(f"{run.machine.instance_id} is not running")
    return problems


def _neither_rebooted_nor_replaced(world: World, instance_id: str) -> list[str]:
    """What the hypervisor did to the instance that a node given back must not have had."""
    return [
        f"{instance_id} had a {event}"
        for event in ("reboot", "unhealthy")
        if world.machine_events(instance_id, event)
    ]


def _unmarked(node: client.V1Node) -> list[str]:
    """Neither cordoned nor tainted by nodemedic."""
    name = node.metadata.name
    problems = []
    if node.spec.unschedulable:
        problems.append(f"{name} is still cordoned")
    if any(t.key == TAINT_KEY for t in node.spec.taints or []):
        problems.append(f"{name} still has the {TAINT_KEY} taint")
    return problems


def _given_back(world: World, run: FaultRun) -> list[str]:
    """Held for a fleet event: neither rebooted nor replaced, back in service, marked."""
    instance_id, name = run.machine.instance_id, run.machine.node
    problems = _neither_rebooted_nor_replaced(world, instance_id)
    if world.instance_state(instance_id) != "running":
        problems.append(f"{instance_id} is not running")
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    problems += _unmarked(node)
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
    problems += _labelled_schedulable(node)
    if world.machine_events(run.machine.instance_id, "reboot"):
        problems.append(f"{run.machine.instance_id} was rebooted")
    return problems


def _held(world: World, run: FaultRun) -> list[str]:
    """Held by the breaker until its hold ran out: quarantined meanwhile where its limit had
    room (cordoned and tainted, never drained), then given back: neither rebooted nor
    replaced, uncordoned, untainted, labelled schedulable."""
    name = run.machine.node
    problems = _neither_rebooted_nor_replaced(world, run.machine.instance_id)
    node = world.node(name)
    if node is None:
        return [*problems, f"node {name} is gone"]
    return problems + _unmarked(node) + _labelled_schedulable(node)


def _labelled_schedulable(node: client.V1Node) -> list[str]:
    label = (node.metadata.labels or {}).get(HEALTH_LABEL)
    if label in (None, "Schedulable"):
        return []
    return [f"{node.metadata.name} is labelled {HEALTH_LABEL}={label}"]


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


def judged(world: World, observer: Observer, run: FaultRun, say: Say) -> None:
    """Follow one injected fault to its end, each step said as it happens, then check what
    came of it and say the verdict: how most scenarios show a fault."""
    follow(observer, [run], lambda r, step: say("  " + format_step(r, step)), timeout=FAULT_TIMEOUT)
    verify(world, run)
    say(f"  => {verdict_line(run)}")


def each_judged(world: World, faults: tuple[Fault, ...], say: Say) -> list[FaultRun]:
    """Each fault injected on a healthy node of its own (``targets``), one after the other,
    each followed to its end and judged: a scenario of lines and their expected outcomes."""
    observer = Observer(world)
    runs = []
    for fault, machine in zip(faults, targets(world, len(faults)), strict=True):
        say("")
        say(f"{fault.title} on {machine.node} ({machine.instance_id}); expect: {fault.expect}")
        run = inject(world, machine, fault)
        runs.append(run)
        judged(world, observer, run, say)
    return runs
