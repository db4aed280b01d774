"""What the lifecycle scenario (``world.scenarios.lifecycle``) reads of the world, and how
it waits: the Nodes as the watch saw them, the group's instances, the executions it starts
as their schedules would. Waits are polled with a deadline, and a missed one is a problem
noted, not an exception: the scenario goes on and reports every outcome."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from nodemedic.contracts.kube import DEEP_CHECK_LABEL, DEEP_CHECK_TAINT_KEY
from world.kube.watch import NodeSeen
from world.observe import Observer, follow
from world.scenarios.kit import FAULT_TIMEOUT, run_as_scheduled
from world.timeline import Fault, FaultRun, format_step, inject
from world.world import Machine, Say, World

WAIT = FAULT_TIMEOUT
"""Each wait ends once what it waits for is seen: the deadline is for a loaded machine."""


class Lifecycle:
    """The scenario's state: what it saw, what went wrong, what it measured."""

    def __init__(self, world: World, say: Say) -> None:
        self.world = world
        self.say = say
        self.observer = Observer(world)
        self.problems: list[str] = []
        self.runs: list[FaultRun] = []
        self.found: dict[str, Any] = {}
        self.core = client.CoreV1Api(world.api)
        self.targets: list[Machine] = []
        self.labelled: Machine | None = None

    def expect(self, holds: bool, problem: str) -> bool:
        if not holds:
            self.problems.append(problem)
        return holds

    def wait(self, check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """``check()`` once it is truthy (polled), else None with the problem noted."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.25)
        self.problems.append(f"{what}: not within {timeout:.0f}s")
        return None

    def show(self, began: float, what: str, at: float | None = None) -> None:
        """``what`` happened at epoch ``at`` (default: now), ``began`` being 0."""
        self.say(f"  +{(at or time.time()) - began:6.2f}s  {what}")

    def fault(self, fault: Fault, machine: Machine) -> FaultRun:
        self.say(f"  {fault.title} on {machine.node} ({machine.instance_id})")
        run = inject(self.world, machine, fault)
        self.runs.append(run)
        follow(
            self.observer,
            [run],
            lambda r, step: self.say("  " + format_step(r, step)),
            timeout=FAULT_TIMEOUT,
        )
        return run

    # What the cluster and the group say ------------------------------------------------

    def labels(self, instance_id: str) -> dict[str, str]:
        node = self.world.node(self.world.machines[instance_id].node)
        return dict(node.metadata.labels or {}) if node is not None else {}

    def admitted(self, instance_id: str) -> bool:
        """Passed and schedulable: no taint at all, not cordoned."""
        seen = self.world.watch.latest(instance_id)
        return (
            seen is not None
            and seen.event != "DELETED"
            and not seen.taints
            and not seen.unschedulable
            and self.labels(instance_id).get(DEEP_CHECK_LABEL) == "Passed"
        )

    def lifecycle_state(self, instance_id: str) -> str:
        found = self.world.aws("autoscaling").describe_auto_scaling_instances(
            InstanceIds=[instance_id]
        )["AutoScalingInstances"]
        return str(found[0]["LifecycleState"]) if found else "gone"

    def standby(self) -> set[str]:
        (group,) = self.world.aws("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
        return {i["InstanceId"] for i in group["Instances"] if i["LifecycleState"] == "Standby"}

    def newcomer(self, since: float) -> str | None:
        launched = [e for e in self.world.events if e.kind == "launched" and e.at >= since]
        return launched[0].instance_id if launched else None

    def schedulable_at(self, instance_id: str, since: float) -> float | None:
        seen = self.world.watch.first(instance_id, since, schedulable)
        return None if seen is None else seen.at

    def execution_started(self, instance_id: str) -> float | None:
        """When the remediation of ``instance_id`` started (its latest execution)."""
        sfn = self.world.aws("stepfunctions")
        arn = self.world.state_machine_arn
        for listed in sfn.list_executions(stateMachineArn=arn)["executions"]:
            described = sfn.describe_execution(executionArn=listed["executionArn"])
            if json.loads(described["input"]).get("instance_id") == instance_id:
                return float(described["startDate"].timestamp())
        return None

    def run_as_rule(self, machine_prefix: str) -> dict[str, Any]:
        """The aftercare state machine's execution its schedule would start; its output."""
        ended = run_as_scheduled(self.world, machine_prefix, timeout=60)
        if ended is None:
            self.problems.append(f"{machine_prefix} ran: not within 60s")
        return ended or {}


def schedulable(seen: NodeSeen) -> bool:
    return seen.event != "DELETED" and seen.ready and not seen.taints and not seen.unschedulable


def health_checking(seen: NodeSeen) -> bool:
    return any(t.startswith(f"{DEEP_CHECK_TAINT_KEY}=") for t in seen.taints)
