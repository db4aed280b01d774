"""The local world as the scenarios see it: the demo cluster's settings, its machines and
what happened to them, the clients that reach its AWS and its Kubernetes, and what the
world does when the hypervisor reboots, powers off or launches a machine. ``start.py``
starts it (``local_world``) and says what runs where.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.parsers import ResponseParserError
from kubernetes import client

from nodemedic.contracts.kube import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    UNSCHEDULABLE,
)
from nodemedic.settings import ClusterSettings
from world import deepcheck, image
from world.agents import AgentFleet
from world.aws.cloudformation import Deployment
from world.aws.gpus import Gpus
from world.aws.inbox import Inbox
from world.aws.motoserver import REGION
from world.kube.kubeapi import LocalCluster
from world.kube.kubelet import SimulatedKubelet
from world.kube.watch import NodeWatch
from world.kube.workload import TrainingJob

NODE_GROUP = "accelerated"
INSTANCE_TYPE = "p5.48xlarge"
RESETTABLE_TYPE = "g6.12xlarge"
"""A type whose GPUs reset one at a time (``nodemedic.health.instance_types``), for the
worlds that show the GPU reset rung: a p5 cannot, so its reset is a reboot."""
DEVICES = {
    INSTANCE_TYPE: {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
    RESETTABLE_TYPE: {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"},
    "g6.xlarge": {"nvidia.com/gpu": "1"},
    "trn1.32xlarge": {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "8"},
}
"""What each machine's Node advertises, per instance type the world builds."""
REBOOT_SECONDS = 1.0
"""How long a rebooting machine's Node stays NotReady."""
STATE_READS = 3
"""How many times ``World.instance_state`` asks moto's EC2 before it gives up."""
REGISTERED_UNCHECKED = {HEALTH_LABEL: UNSCHEDULABLE, DEEP_CHECK_LABEL: "InProgress"}
"""How a node joins where a deep check gates it (docs/deploy.md: the kubelet's
``--node-labels``), with the taint ``nodemedic.io/health-check:NoSchedule``."""
Say = Callable[[str], None]


def demo_settings(**overrides: Any) -> ClusterSettings:
    """The demo cluster: every wait of the state machine in seconds, not minutes. Its faults
    are lines ``nodemedic inject`` appends to the files the agents follow, which no kernel
    wrote, so it accepts injected faults (a real cluster does not). A fault's fleet window
    is a minute and settles in 6 s (not 10 minutes and 60 s), so that every other fault is
    rebooted or replaced 6 s after it was seen at most; the storm scenario's settles in 30 s
    (``world.scenarios.storm.STORM_SETTLE``: one world classifies a storm's lines one batch
    after another)."""
    values: dict[str, Any] = {
        "name": "demo",
        "node_groups": (NODE_GROUP,),
        "accept_injected_faults": True,
        "poll_seconds": 1,
        "drain_timeout": 4,
        "reboot_timeout": 20,
        "breaker_hold": 120,
        "fleet_window": 60,
        "fleet_settle": 6,
        # The demo's agents run no deep check after a reboot: gated, its rebooted nodes
        # would wait out of service for a verdict that never comes.
        "post_reboot_deep_check": False,
        **overrides,
    }
    return ClusterSettings(**values)


@dataclass(frozen=True)
class Machine:
    instance_id: str
    node: str
    zone: str


@dataclass(frozen=True)
class MachineEvent:
    """Something that happened to a machine, seen from the hypervisor, at epoch ``at``."""

    at: float
    kind: str
    """``reboot`` (RebootInstances reached it), ``back`` (up with a new boot id),
    ``unhealthy`` (set Unhealthy: terminating, powered off), ``launched`` (a replacement
    joined the cluster)."""
    instance_id: str
    detail: str = ""


@dataclass
class World:
    settings: ClusterSettings
    workdir: Path
    endpoint: str
    deployment: Deployment
    cluster: LocalCluster
    api: client.ApiClient
    kubelet: SimulatedKubelet
    watch: NodeWatch
    job: TrainingJob
    agents: AgentFleet
    inbox: Inbox
    machines: dict[str, Machine] = field(default_factory=dict)
    events: list[MachineEvent] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    deep_checks: bool = False
    """Nodes join behind the health-check taint and their agents run the deep check at
    start (``deepcheck``); off, they join schedulable and run none."""
    checks: dict[str, str] = field(default_factory=dict)
    """Instance id -> what its deep check finds (``deepcheck.OUTCOMES``), every boot."""
    launch_checks: deque[str] = field(default_factory=deque)
    """What the deep checks of the next instances the group launches find, in launch order;
    ``pass`` once it is empty."""
    spares: list[str] = field(default_factory=list)
    """The instances the world put in Standby as the group's spares (setting ``spares``)."""
    instance_type: str = INSTANCE_TYPE
    """Every machine's but those in ``types``: the group's launch template's."""
    types: dict[str, str] = field(default_factory=dict)
    """Instance id -> its type, where not ``instance_type`` (``type_of``): its Node's label
    and devices, and with ``default_image`` what its agent knows and finds. Auto Scaling
    still answers the group's, which the pipeline asks only with ``gpu_reset`` on."""
    default_image: bool = False
    """The agents find what the default image finds on a node of their type
    (``world.image``), not the world's stand-ins for the deep check's tools."""
    hyperpod: str | None = None
    """The HyperPod cluster whose nodes the machines are (None: the Auto Scaling group's
    members): its batch calls reboot and replace them."""
    karpenter: set[str] = field(default_factory=set)
    """The instances Karpenter launched for its NodePool (``world.nodepool``): replaced by
    deleting their NodeClaim, terminated once Karpenter deleted their Node."""
    gpus: Gpus = field(default_factory=Gpus)
    agent_processes: bool = True
    """Each machine runs an agent, restarted with its boots; off, none ever does (the caller
    writes the nodes' streams: ``bench/storm.py``, ``bench/scale.py``)."""
    """The machines' GPUs, as the SSM commands sent to them find them."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _clients: dict[str, Any] = field(default_factory=dict)
    _clients_lock: threading.Lock = field(default_factory=threading.Lock)

    def aws(self, service: str) -> Any:
        """The world's AWS client of ``service``, made once. A client is safe to share
        between threads; making one is not (boto3's default session), and it loads and
        resolves the service's model, which every replaced instance paid in a storm."""
        with self._clients_lock:
            made = self._clients.get(service)
            if made is None:
                made = boto3.client(service, region_name=REGION, endpoint_url=self.endpoint)
                self._clients[service] = made
        return made

    @property
    def state_machine_arn(self) -> str:
        return self.deployment.find(
            "AWS::StepFunctions::StateMachine", "RemediationStateMachine"
        ).ref

    @property
    def ledger_table(self) -> str:
        return self.deployment.find("AWS::DynamoDB::Table", "RemediationLedger").ref

    @property
    def classifier_log_group(self) -> str:
        function = self.deployment.find("AWS::Lambda::Function", "IngestClassifier").ref
        return f"/aws/lambda/{function}"

    def node(self, name: str) -> client.V1Node | None:
        """The Node by name, or None once it is deleted."""
        try:
            node: client.V1Node = client.CoreV1Api(self.api).read_node(name)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return node

    def instance_state(self, instance_id: str) -> str:
        """What EC2 says of the instance: ``running``, ``shutting-down``, ``terminated``...

        Asked again, up to ``STATE_READS`` times, where moto's server answered with its
        HTTP 500 page instead of EC2's XML: it did once, in a cold CI run's planned scenario
        at its busiest, right after the group replaced the instance. The scenario had done
        everything it should; only this read of its verdict failed. A botocore client
        retries a 500 whose body parses, not this one."""
        ec2 = self.aws("ec2")
        for attempt in range(1, STATE_READS + 1):
            try:
                reservations = ec2.describe_instances(InstanceIds=[instance_id])
            except ResponseParserError:
                if attempt == STATE_READS:
                    raise
                time.sleep(attempt)
                continue
            break
        return str(reservations["Reservations"][0]["Instances"][0]["State"]["Name"])

    def live_machines(self) -> list[Machine]:
        """The machines not (yet) terminated by their group, in node order."""
        with self._lock:
            gone = {e.instance_id for e in self.events if e.kind == "unhealthy"}
            live = [m for m in self.machines.values() if m.instance_id not in gone]
        return sorted(live, key=lambda m: m.node)

    def type_of(self, instance_id: str) -> str:
        return self.types.get(instance_id, self.instance_type)

    def machine_events(self, instance_id: str, kind: str) -> list[MachineEvent]:
        with self._lock:
            return [e for e in self.events if e.instance_id == instance_id and e.kind == kind]

    def _event(self, kind: str, instance_id: str, detail: str = "") -> None:
        with self._lock:
            self.events.append(MachineEvent(time.time(), kind, instance_id, detail))

    def register(self, machine: Machine) -> client.V1Node:
        """The machine's Node joins the cluster, behind the health-check taint when a deep
        check gates it."""
        gated = self.deep_checks
        instance_type = self.type_of(machine.instance_id)
        return self.kubelet.register(
            machine.node,
            machine.instance_id,
            az=machine.zone,
            nodegroup=NODE_GROUP,
            instance_type=instance_type,
            devices=DEVICES[instance_type],
            labels=REGISTERED_UNCHECKED if gated else None,
            taints=[{"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}] if gated else (),
        )

    def start_agent(self, instance_id: str, boot_id: str) -> None:
        if not self.agent_processes:
            return
        outcome = self.checks.setdefault(instance_id, "pass")
        extra: list[str] = []
        if self.default_image:
            node_dir = self.agents.settings.workdir / instance_id
            extra = image.agent_args(self.type_of(instance_id), node_dir)
        elif self.deep_checks:
            extra = deepcheck.agent_args(outcome)
        self.agents.start(instance_id, boot_id, extra, self.machines[instance_id].node)

    # What the hypervisor does to a machine. Runs on its timer threads.

    def rebooted(self, instance_id: str) -> None:
        self._event("reboot", instance_id)
        machine = self.machines[instance_id]
        before = self.watch.latest(instance_id)
        self.agents.stop(instance_id)
        self.kubelet.reboot(machine.node, down_seconds=REBOOT_SECONDS)

        def back() -> str | None:
            seen = self.watch.latest(instance_id)
            if seen and seen.ready and before and seen.boot_id != before.boot_id:
                return seen.boot_id
            return None

        if self.watch.wait(lambda: back() is not None, timeout=30):
            boot_id = back() or ""
            self.start_agent(instance_id, boot_id)
            self._event("back", instance_id, boot_id)

    def powered_off(self, instance_id: str) -> None:
        self._event("unhealthy", instance_id)
        self.agents.stop(instance_id)

    def launched(self, instance_id: str) -> None:
        machine = ec2_machine(self.aws("ec2"), instance_id)
        with self._lock:
            if self.launch_checks:
                self.checks[instance_id] = self.launch_checks.popleft()
        node = self.register(machine)
        self.joined(machine, node.status.node_info.boot_id)

    def joined(self, machine: Machine, boot_id: str) -> None:
        """A launched machine's Node joined, at boot ``boot_id``: it is the world's, and runs
        an agent. Called for the group's replacements and for Karpenter's instances, whose
        Nodes Karpenter creates (``world.nodepool``)."""
        with self._lock:
            self.machines[machine.instance_id] = machine
        self.start_agent(machine.instance_id, boot_id)
        self._event("launched", machine.instance_id, machine.node)


def ec2_machine(ec2: Any, instance_id: str) -> Machine:
    """The Node an EKS instance registers as: named by its private DNS name."""
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    instance = reservations[0]["Instances"][0]
    return Machine(
        instance_id=instance_id,
        node=instance["PrivateDnsName"],
        zone=instance["Placement"]["AvailabilityZone"],
    )
