"""``nodemedic demo --scenario lifecycle``: a node's life under nodemedic (issue 15's proof).

Every node joins behind the health-check taint and its agent runs the deep check at start
(``world.deepcheck`` says what each machine's check finds); the group keeps one
spare in Standby. In turn, each on its own node:

1. the nodes that joined pass and become schedulable;
2. an Xid 48 reboots a node, which stays cordoned until its post-repair check passes;
3. a Neuron DMA error replaces a node: the spare is in service at once, and the refill's
   newcomer, whose check hangs, goes to Standby and is told overdue once, still tainted;
4. an operator labels a node ``UnschedulablePendingReplacement``: it is replaced, with no
   trusted spare left (the hung one), so capacity waits for the launch and nothing refills;
   its newcomer passes and becomes schedulable;
5. a DMA error replaces another node whose newcomer fails its check: that one is replaced
   in turn and never untainted;
6. ``nodemedic history`` (the CLI's own function on the world's ledger) shows them all.

The EventBridge schedules of the label requests and of the reconcile fire in moto only when
started by hand; the scenario starts their state machines as the rules would.
"""

from __future__ import annotations

import time
from typing import Any

from nodemedic.contracts.kube import (
    AWAITING_DEEP_CHECK_OUTCOME,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    REQUESTED_BY_ANNOTATION,
    SPARE_LABEL,
)
from nodemedic.contracts.logs import DEEP_CHECK_FAILED_FAULT
from world.deepcheck import CHECK_SECONDS
from world.kube.watch import NodeSeen
from world.scenarios.kit import (
    DMA_ERROR,
    RECONCILE,
    XID_48,
    Result,
    history_entries,
    targets,
)
from world.scenarios.lifewatch import Lifecycle, health_checking
from world.scenarios.verdict import verify
from world.timeline import FaultRun
from world.world import Machine, Say, World

LABEL_MANAGER = "kubectl-label"
LABEL_REQUESTER = "admin"
"""The user of the world's cluster-admin kubeconfig (world/kube/kubeauth.py), who labels."""
PHASES = 4
"""Nodes the scenario acts on, one per phase."""
LAUNCH_SECONDS = 6.0
"""The simulated EC2 launch plus EKS join, from ``Unhealthy`` to the replacement's Node
joining (the world's ``launch_seconds``): a stand-in for the minutes they take on AWS
(docs/deploy.md, "Spares"), so that what a spare saves shows."""


def run_lifecycle(world: World, say: Say) -> Result:
    life = Lifecycle(world, say)
    phases = (_joined, _rebooted, _spare, _labelled, _failed_newcomer, _history)
    for phase in phases:
        say("")
        phase(life)
    found = life.found
    if {"spare_seconds", "no_spare_seconds"} <= set(found):
        say("")
        say(
            f"Replace decision to schedulable capacity: {found['spare_seconds']:.2f}s with the "
            f"spare, {found['no_spare_seconds']:.2f}s without (launch and join simulated as "
            f"{LAUNCH_SECONDS:g}s, deep check {CHECK_SECONDS:g}s; on AWS both take minutes); "
            f"the post-reboot gate held the node {found.get('gate_seconds', '?')}s"
        )
    result = Result("lifecycle", life.runs, life.problems)
    result.pacing = life.found
    return result


def _joined(life: Lifecycle) -> None:
    """1: every node that joined passed its deep check and is schedulable (the spare too,
    but held back as a spare)."""
    world, began = life.world, time.time()
    life.say("1. New nodes join behind nodemedic.io/health-check; each agent's deep check decides")
    serving = [m.instance_id for m in world.live_machines() if m.instance_id not in world.spares]
    life.wait(lambda: all(life.admitted(i) for i in serving), "every new node admitted")
    life.wait(
        lambda: all(life.labels(i).get(DEEP_CHECK_LABEL) == "Passed" for i in world.spares),
        "the spare's deep check passed",
    )
    admitted = sum(life.admitted(i) for i in serving)
    life.show(began, f"{admitted}/{len(serving)} nodes passed and are schedulable")
    life.show(began, f"spare(s) {', '.join(world.spares)} passed, held in Standby")
    life.found["admitted_at_start"] = admitted


def _rebooted(life: Lifecycle) -> None:
    """4: a rebooted node stays cordoned behind the health-check taint with its new boot id
    until its post-repair deep check passes. The agent checks as it starts, so the pass can
    also come before nodemedic sees the node back: still under remediation, the node is then
    given back at once, ``Passed`` (outcome ``rebooted``)."""
    world = life.world
    life.say("2. A reboot, then the post-repair deep check (post_reboot_deep_check)")
    machine = _pick(life, 0)
    run = life.fault(XID_48, machine)
    life.expect(
        run.outcome in (AWAITING_DEEP_CHECK_OUTCOME, "rebooted"),
        f"reboot of {machine.node}: outcome {run.outcome}, not {AWAITING_DEEP_CHECK_OUTCOME}",
    )
    if run.outcome == "rebooted":
        life.show(run.written_at, "deep check passed before the node was seen back: Schedulable")
    else:
        _gated(life, run)
    labels = life.labels(machine.instance_id)
    life.expect(
        labels.get(DEEP_CHECK_LABEL) == "Passed",
        f"{machine.node} is not labelled {DEEP_CHECK_LABEL}=Passed: {labels}, "
        f"{world.watch.latest(machine.instance_id)}",
    )
    run.problems += _reboot_problems(world, run)


def _gated(life: Lifecycle, run: FaultRun) -> None:
    """The rebooted node back with its new boot id, cordoned behind the health-check taint,
    then uncordoned by its pass."""
    world, machine = life.world, run.machine

    def held() -> NodeSeen | None:
        return world.watch.first(
            machine.instance_id,
            run.written_at,
            lambda s: s.boot_id != run.boot_id and s.ready and health_checking(s),
        )

    gated = life.wait(held, f"{machine.node} held for its deep check")
    back = gated and life.wait(
        lambda: life.schedulable_at(machine.instance_id, gated.at),
        f"{machine.node} uncordoned after its post-repair check",
    )
    if gated:
        life.expect(gated.unschedulable, f"{machine.node} was held but not cordoned")
        what = f"back with boot id {gated.boot_id[:8]}, held: cordoned, {DEEP_CHECK_TAINT_KEY}"
        life.show(run.written_at, what, gated.at)
    if gated and back:
        life.show(run.written_at, "deep check Passed: uncordoned, Schedulable", back)
        life.found["gate_seconds"] = round(back - gated.at, 2)


def _reboot_problems(world: World, run: FaultRun) -> list[str]:
    """The default scenario's checks of a reboot (``verify``), once the gate let it go."""
    checked = FaultRun(run.fault, run.machine, run.rule, run.line, run.boot_id, run.steps)
    checked.outcome = "rebooted"
    verify(world, checked)
    return checked.problems


def _spare(life: Lifecycle) -> None:
    """5 with a spare: in service at once, a refill started; 3: the refill's newcomer, whose
    check hangs, is told overdue once and stays tainted."""
    world = life.world
    life.say("3. A replace in a group with a spare (spares: 1)")
    world.launch_checks.append("hang")
    machine = _pick(life, 1)
    run = life.fault(DMA_ERROR, machine)
    verify(world, run)
    if not life.expect(len(world.spares) == 1, f"the group kept spares {world.spares}, not 1"):
        return
    (spare,) = world.spares
    step = run.steps.get("started")  # the observer saw this run's execution start
    started = step.at if step else run.written_at
    at = life.schedulable_at(spare, started)
    newcomer = life.wait(lambda: life.newcomer(started), "the group launched a replacement")
    if life.expect(at is not None, f"spare {spare} never became schedulable") and at:
        life.show(run.written_at, f"spare {spare}: ExitStandby, InService, schedulable", at)
        life.found["spare_seconds"] = round(at - started, 2)
        launched = world.machine_events(newcomer or "", "launched")
        life.expect(
            bool(launched) and at < launched[0].at,
            "the spare was not in service before the replacement launched",
        )
    life.expect(life.lifecycle_state(spare) == "InService", f"spare {spare} is not InService")
    if newcomer is None:
        return
    joined = world.machine_events(newcomer, "launched")
    life.show(
        run.written_at,
        f"refill: {newcomer} launched and joined ({LAUNCH_SECONDS:g}s simulated)",
        joined[0].at if joined else None,
    )
    refilled = life.wait(
        lambda: (
            life.lifecycle_state(newcomer) == "Standby"
            and life.labels(newcomer).get(SPARE_LABEL) == "true"
        ),
        f"refill: {newcomer} held back in Standby",
    )
    if refilled:
        life.show(run.written_at, f"refill: {newcomer} EnterStandby, held back as the spare")
    _overdue(life, newcomer)


def _overdue(life: Lifecycle, instance_id: str) -> None:
    """3: no verdict within ``deep_check_timeout``: told once, still tainted."""
    world = life.world
    node = world.machines[instance_id].node
    timeout = world.settings.deep_check_timeout
    began = time.time()
    life.say(f"  {node}: its deep check hangs; the reconcile runs every minute")

    def told_after_a_tick() -> list[str]:
        life.run_as_rule(RECONCILE)
        return _told(world, node)

    told = life.wait(told_after_a_tick, f"{node} told overdue", timeout=timeout + 60)
    # Another tick: each wait is told once.
    life.run_as_rule(RECONCILE)
    if told:
        life.show(began, f"notified (deep_check_timeout {timeout}s): {told[0][:80]}...")
    times = len(_told(world, node))
    life.expect(times == 1, f"{node} was told overdue {times}x")
    seen = world.watch.latest(instance_id)
    life.expect(
        seen is not None
        and health_checking(seen)
        and life.labels(instance_id).get(DEEP_CHECK_LABEL) == "InProgress",
        f"{node} left the health-check taint without a verdict",
    )
    life.found["overdue"] = node


def _told(world: World, node: str) -> list[str]:
    return [
        str(n.body.get("text", ""))
        for n in world.inbox.messages()
        if n.subject.endswith("deep checks overdue") and node in str(n.body.get("text", ""))
    ]


def _labelled(life: Lifecycle) -> None:
    """6: a label set by hand replaces the node; 5 without a spare: no ExitStandby, no
    refill, capacity back when the newcomer passes; 1: that new node becomes schedulable."""
    world = life.world
    life.say("4. An operator labels a node UnschedulablePendingReplacement (no trusted spare left)")
    machine = life.labelled = _pick(life, 2)
    pool = life.standby()
    world.launch_checks.append("pass")
    began = time.time()
    # The chart's policy makes a request name its writer; the world's writer is its admin.
    life.core.patch_node(
        machine.node,
        {
            "metadata": {
                "labels": {HEALTH_LABEL: "UnschedulablePendingReplacement"},
                "annotations": {REQUESTED_BY_ANNOTATION: LABEL_REQUESTER},
            }
        },
        field_manager=LABEL_MANAGER,
    )
    life.show(began, f"kubectl label node {machine.node} {HEALTH_LABEL}=...PendingReplacement")
    ticked = life.run_as_rule("RemediationAftercareRequests")
    life.show(began, f"request reconcile (every minute) started: {ticked.get('nodes')}")
    newcomer = life.wait(lambda: life.newcomer(began), "the group launched a replacement")
    started = life.execution_started(machine.instance_id) or began
    life.expect(world.node(machine.node) is None, f"labelled {machine.node} was not replaced")
    if newcomer is None:
        return
    life.show(began, f"{machine.node} replaced; {newcomer} launched ({LAUNCH_SECONDS:g}s)")
    if life.wait(lambda: life.admitted(newcomer), f"new node {newcomer} admitted"):
        at = life.schedulable_at(newcomer, started) or time.time()
        launched = world.machine_events(newcomer, "launched")
        life.expect(bool(launched) and launched[0].at <= at, "capacity came back before the launch")
        life.show(began, f"new node {newcomer}: deep check Passed, schedulable")
        life.found["no_spare_seconds"] = round(at - started, 2)
    life.expect(life.standby() == pool, f"the pool changed without a spare: {pool} -> ...")
    life.expect(
        life.lifecycle_state(newcomer) == "InService", f"{newcomer} was not left in service"
    )


def _failed_newcomer(life: Lifecycle) -> None:
    """2: a new node that fails its deep check is replaced and never untainted."""
    world = life.world
    life.say("5. A replace whose new node fails its deep check (NCCL bandwidth low)")
    machine = _pick(life, 3)
    world.launch_checks.extend(["fail", "pass"])
    run = life.fault(DMA_ERROR, machine)
    verify(world, run)
    sick = life.wait(lambda: life.newcomer(run.written_at), "the group launched a replacement")
    if sick is None:
        return
    node = world.machines[sick].node
    life.show(run.written_at, f"{sick} launched, joins behind the health-check taint")
    gone = life.wait(
        lambda: world.watch.first(sick, run.written_at, lambda s: s.event == "DELETED"),
        f"{node} (failed its check) replaced",
    )
    if gone:
        life.show(run.written_at, f"{sick}: deep check Failed -> replaced, Node deleted")
    seen = world.watch.history(sick)
    life.expect(
        all(health_checking(s) for s in seen if s.event != "DELETED"),
        f"{node} lost its health-check taint before it was replaced",
    )
    life.expect(bool(world.machine_events(sick, "unhealthy")), f"{sick} was never set Unhealthy")
    life.found["failed_newcomer"] = sick


def _history(life: Lifecycle) -> None:
    """7: ``nodemedic history --format json`` over the world's ledger shows every one."""
    world = life.world
    life.say("6. nodemedic history --cluster demo --format json")
    wanted = {
        life.runs[0].machine.instance_id: AWAITING_DEEP_CHECK_OUTCOME,
        life.runs[1].machine.instance_id: "replaced",
        life.runs[2].machine.instance_id: "replaced",
    }
    if life.labelled is not None:
        wanted[life.labelled.instance_id] = "replaced"
    failed = life.found.get("failed_newcomer")
    if failed:
        wanted[failed] = "replaced"

    def missing(shown: list[dict[str, Any]]) -> dict[str, list[Any]]:
        """Instance → the outcomes ``shown`` has, for each without the one wanted."""
        outcomes: dict[str, list[Any]] = {i: [] for i in wanted}
        for entry in shown:
            outcomes.setdefault(str(entry.get("instance_id")), []).append(entry.get("outcome"))
        return {i: outcomes[i] for i, outcome in wanted.items() if outcome not in outcomes[i]}

    # The failed newcomer's remediation closes a moment after its Node is gone.
    life.wait(lambda: not missing(history_entries(world)[1]), "every remediation closed")
    code, shown = history_entries(world)
    life.expect(code == 0, f"nodemedic history exited {code}")
    for instance_id, outcomes in missing(shown).items():
        life.problems.append(f"history of {instance_id}: {outcomes}, no {wanted[instance_id]}")
    for entry in shown:
        steps = ", ".join(str(s.get("step")) for s in entry.get("steps", []))
        life.say(
            f"  {entry.get('instance_id')}  {entry.get('fault_id')!s:<22} "
            f"{entry.get('outcome')!s:<28} by {entry.get('triggered_by')}: {steps}"
        )
    manual = [e for e in shown if e.get("source") == "manual"]
    life.expect(
        any(
            e.get("triggered_by") == LABEL_REQUESTER
            and f"label {HEALTH_LABEL}" in str(e.get("request_reason", ""))
            for e in manual
        ),
        "history names no label-driven replace",
    )
    life.expect(
        any(e.get("fault_id") == DEEP_CHECK_FAILED_FAULT for e in shown),
        "history has no replace for a failed deep check",
    )
    life.found["history_entries"] = len(shown)


def _pick(life: Lifecycle, index: int) -> Machine:
    """The scenario's ``index``-th node: healthy nodes running workers first, as ``targets``
    orders them, chosen once at the start so that each phase has its own."""
    if not life.targets:
        spares = life.world.spares
        healthy = targets(life.world, PHASES + len(spares))
        life.targets = [m for m in healthy if m.instance_id not in spares][:PHASES]
    return life.targets[index]
