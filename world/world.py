"""The local world: the whole nodemedic pipeline on one machine, with no AWS account.

- AWS is a moto server on loopback (``motoserver.py``), in this process so that the Lambda
  handlers run in it (``inprocess.py``), with Step Functions executing the state machine
  (its definition parsed once, ``stepfunctions.py``); ``motopatch.py`` names every change
  the world makes to moto. Into it goes the template ``cdk synth`` produces for the
  cluster (``stacks.synth``), deployed by ``world.aws``; beside it an Auto
  Scaling node group of accelerator instances (``aws.node_group``: EKS owns node groups,
  the stack does not) and a queue subscribed to the notifications topic, the inbox a
  person would read (``inbox.py``).
- Kubernetes is the real kube-apiserver (``kubeapi.local_cluster``) with one Node per
  instance (``providerID aws:///<az>/<instance-id>``), simulated kubelets, a training job
  spread over the nodes with its PodDisruptionBudget (``workload.py``), and a watch that
  records every change to the Nodes (``watch.py``).
- Each instance runs a real ``nodemedic agent`` process (``agents.py``) following its
  kernel log file and shipping to the moto Logs endpoint. What moto's EC2 and Auto
  Scaling calls do to the machines is played by ``hypervisor.py``: a reboot brings the
  Node back with a new boot id and a new agent, an ``Unhealthy`` instance is terminated
  and its replacement joins the cluster as a new Node.

Everything started is stopped on the way out, whatever ends the block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from kubernetes import client

from nodemedic.contracts.jobs import application_log_group
from nodemedic.contracts.kube import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    UNSCHEDULABLE,
)
from nodemedic.settings import ClusterSettings
from world import deepcheck
from world.agents import AgentFleet, AgentSettings
from world.aws import deploy, node_group
from world.cloudformation import Deployment
from world.hypervisor import Hypervisor, machines
from world.identity import MetadataService, local_authority
from world.inbox import Inbox
from world.kubeapi import KUBE_VERSION, LocalCluster, binary_dir, local_cluster
from world.kubelet import SimulatedKubelet
from world.motoserver import CREDENTIALS, REGION, moto_server
from world.spares import chosen, stand_by
from world.watch import NodeWatch
from world.workload import TrainingJob

ZONE = "us-east-1a"
NODE_GROUP = "accelerated"
INSTANCE_TYPE = "p5.48xlarge"
DEVICES = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
REBOOT_SECONDS = 1.0
"""How long a rebooting machine's Node stays NotReady."""
TERMINATE_SECONDS = 1.0
"""From ``Unhealthy`` to the group terminating the instance and launching its replacement."""
REGISTERED_UNCHECKED = {HEALTH_LABEL: UNSCHEDULABLE, DEEP_CHECK_LABEL: "InProgress"}
"""How a node joins where a deep check gates it (docs/deploy.md: the kubelet's
``--node-labels``), with the taint ``nodemedic.io/health-check:NoSchedule``."""
Say = Callable[[str], None]


def demo_settings(**overrides: Any) -> ClusterSettings:
    """The demo cluster: every wait of the state machine in seconds, not minutes. Its faults
    are lines ``nodemedic inject`` appends to the files the agents follow, which no kernel
    wrote, so it accepts injected faults (a real cluster does not). A fault's fleet window
    is a minute and settles in 6 s (not 10 minutes and 60 s): a demo's storm lands within a
    second on an idle machine and took over 3 s on a loaded one, and every other fault is
    rebooted or replaced 6 s after it was seen at most."""
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
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def aws(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=self.endpoint)

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
        """What EC2 says of the instance: ``running``, ``shutting-down``, ``terminated``..."""
        reservations = self.aws("ec2").describe_instances(InstanceIds=[instance_id])
        return str(reservations["Reservations"][0]["Instances"][0]["State"]["Name"])

    def live_machines(self) -> list[Machine]:
        """The machines not (yet) terminated by their group, in node order."""
        with self._lock:
            gone = {e.instance_id for e in self.events if e.kind == "unhealthy"}
            live = [m for m in self.machines.values() if m.instance_id not in gone]
        return sorted(live, key=lambda m: m.node)

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
        return self.kubelet.register(
            machine.node,
            machine.instance_id,
            az=machine.zone,
            nodegroup=NODE_GROUP,
            instance_type=INSTANCE_TYPE,
            devices=DEVICES,
            labels=REGISTERED_UNCHECKED if gated else None,
            taints=[{"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}] if gated else (),
        )

    def start_agent(self, instance_id: str, boot_id: str) -> None:
        outcome = self.checks.setdefault(instance_id, "pass")
        extra = deepcheck.agent_args(outcome) if self.deep_checks else []
        self.agents.start(instance_id, boot_id, extra)

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
        machine = _machine(self.aws("ec2"), instance_id)
        with self._lock:
            self.machines[instance_id] = machine
            if self.launch_checks:
                self.checks[instance_id] = self.launch_checks.popleft()
        node = self.register(machine)
        self.start_agent(instance_id, node.status.node_info.boot_id)
        self._event("launched", instance_id, machine.node)


@contextlib.contextmanager
def local_world(
    workdir: Path,
    *,
    settings: ClusterSettings | None = None,
    nodes: int = 8,
    workers: int = 6,
    say: Say = print,
    agent_processes: bool = True,
    deep_checks: bool = False,
    launch_seconds: float = TERMINATE_SECONDS,
) -> Iterator[World]:
    """Start the world under ``workdir`` (logs of every process land there) and stop all of
    it on the way out; ``say`` reports progress. ``nodes`` in service, and the ``spares`` the
    settings ask of the group in Standby besides; ``agent_processes`` False starts no agent:
    the caller writes the nodes' streams itself (``bench/storm.py``'s 1,000 nodes);
    ``deep_checks``: ``World.deep_checks``; ``launch_seconds``: from ``Unhealthy`` to the
    replacement's Node joining."""
    workdir.mkdir(parents=True, exist_ok=True)
    # The machines' identity documents are signed by an authority made for this world,
    # which its cluster trusts in place of AWS's (docs/security.md, "Proof of origin").
    authority = local_authority()
    trusted = authority.write_certificate(workdir / "identity-authority.pem")
    settings = dataclasses.replace(
        settings or demo_settings(), identity_certificates=(str(trusted),)
    )
    began = time.monotonic()
    timings: dict[str, float] = {}
    spares = dict(settings.spares).get(NODE_GROUP, 0)
    with contextlib.ExitStack() as stack:
        metadata = MetadataService(authority, REGION)
        stack.callback(metadata.close)
        endpoint = stack.enter_context(moto_server())
        say(f"AWS: moto server on {endpoint}")

        # The AWS side (synth takes a while) is built while the control plane starts here:
        # the control plane's processes die with the thread that started them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="aws-side") as pool:
            aws_side: Future[tuple[Deployment, list[Machine]]] = pool.submit(
                _build_aws, settings, workdir, endpoint, nodes + spares, timings
            )
            cluster = stack.enter_context(
                _control_plane(workdir, say, timings, jobs=settings.job_monitoring)
            )
            deployment, first_machines = aws_side.result()
        say(
            f"AWS: stack {deployment.stack_name} synthesized in {timings['synth']:.1f}s and "
            f"deployed in {timings['deploy']:.1f}s ({len(deployment.resources)} resources); "
            f"node group {NODE_GROUP}: {len(first_machines)} x {INSTANCE_TYPE}"
        )
        stack.enter_context(
            mock.patch.dict(os.environ, {"KUBECONFIG": str(cluster.remediator_kubeconfig)})
        )
        api = stack.enter_context(cluster.api_client())
        kubelet = stack.enter_context(SimulatedKubelet(api))
        watch = NodeWatch(cluster.api_client).start()
        stack.callback(watch.stop)
        # The instances ``stand_by`` will make spares run no training worker.
        standing = chosen((m.instance_id for m in first_machines), spares)
        job = TrainingJob(api, workers=min(workers, nodes))
        agents = AgentFleet(
            AgentSettings(
                cluster=settings.name,
                region=REGION,
                endpoint_url=endpoint,
                workdir=workdir / "nodes",
                environment={**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint},
                metadata=metadata.endpoint,
            )
        )
        stack.callback(agents.close)
        inbox = Inbox(
            boto3.client("sns", region_name=REGION, endpoint_url=endpoint),
            boto3.client("sqs", region_name=REGION, endpoint_url=endpoint),
            deployment.find("AWS::SNS::Topic").ref,
        )
        world = World(
            settings=settings,
            workdir=workdir,
            endpoint=endpoint,
            deployment=deployment,
            cluster=cluster,
            api=api,
            kubelet=kubelet,
            watch=watch,
            job=job,
            agents=agents,
            inbox=inbox,
            machines={m.instance_id: m for m in first_machines},
            timings=timings,
            deep_checks=deep_checks,
        )
        boots = {m.instance_id: world.register(m).status.node_info.boot_id for m in first_machines}
        job.create([m.node for m in first_machines if m.instance_id not in standing])
        job.start()
        stack.callback(job.stop)
        hypervisor = Hypervisor(
            on_reboot=world.rebooted,
            on_power_off=world.powered_off,
            on_launch=world.launched,
            terminate_after=launch_seconds,
        )
        stack.enter_context(machines(hypervisor))
        started = time.monotonic()
        if agent_processes:
            for instance_id, boot_id in boots.items():
                world.start_agent(instance_id, boot_id)
            _wait_agents_shipping(world, list(boots), timeout=90)
        timings["agents"] = time.monotonic() - started
        if spares:
            core = client.CoreV1Api(api)
            world.spares = stand_by(world.aws("autoscaling"), core, NODE_GROUP, spares)
            say(f"Spares: {', '.join(world.spares)} of {NODE_GROUP} in Standby")
        say(
            f"Nodes: {len(boots)} agents shipping to /nodemedic/{settings.name}/nodes "
            f"(up in {timings['agents']:.1f}s); training job {job.name}: "
            f"{job.workers} workers, PodDisruptionBudget minAvailable {job.workers - 1}"
        )
        timings["world"] = time.monotonic() - began
        yield world


@contextlib.contextmanager
def _control_plane(
    workdir: Path, say: Say, timings: dict[str, float], *, jobs: bool
) -> Iterator[LocalCluster]:
    """``jobs``: the real Job controller runs too, for the simulated training's Jobs."""
    binaries = binary_dir()
    if not all(
        (binaries / name).exists() for name in ("kube-apiserver", "kube-controller-manager")
    ):
        say(
            f"Kubernetes: building kube-apiserver {KUBE_VERSION} from source into {binaries} "
            "(first use only; this takes several minutes)..."
        )
        from world.kubeapi import ensure_binaries

        began = time.monotonic()
        ensure_binaries()
        timings["kube_build"] = time.monotonic() - began
        say(f"Kubernetes: built in {timings['kube_build']:.0f}s")
    with local_cluster(workdir / "kube", controllers=("job",) if jobs else ()) as cluster:
        timings["kube"] = cluster.started_in
        say(f"Kubernetes: kube-apiserver {KUBE_VERSION} ready in {cluster.started_in:.1f}s")
        yield cluster


def _build_aws(
    settings: ClusterSettings,
    workdir: Path,
    endpoint: str,
    size: int,
    timings: dict[str, float],
) -> tuple[Deployment, list[Machine]]:
    from stacks.pipeline import stack_name
    from stacks.synth import synth_template

    began = time.monotonic()
    template = synth_template(settings)
    timings["synth"] = time.monotonic() - began
    began = time.monotonic()
    if settings.job_monitoring:
        # Fluent Bit (Container Insights) creates it on a real cluster; the stack imports it.
        boto3.client("logs", region_name=REGION, endpoint_url=endpoint).create_log_group(
            logGroupName=application_log_group(settings.name)
        )
    deployment = deploy(template, stack_name=stack_name(settings), endpoint_url=endpoint)
    timings["deploy"] = time.monotonic() - began
    instance_ids = node_group(
        NODE_GROUP,
        size,
        region=REGION,
        endpoint_url=endpoint,
        instance_type=INSTANCE_TYPE,
        availability_zone=ZONE,
    )
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    return deployment, [_machine(ec2, i) for i in instance_ids]


def _machine(ec2: Any, instance_id: str) -> Machine:
    """The Node an EKS instance registers as: named by its private DNS name."""
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    instance = reservations[0]["Instances"][0]
    return Machine(
        instance_id=instance_id,
        node=instance["PrivateDnsName"],
        zone=instance["Placement"]["AvailabilityZone"],
    )


def _wait_agents_shipping(world: World, instance_ids: list[str], timeout: float) -> None:
    """Every agent is up once the classifier has seen its first health results."""
    logs = world.aws("logs")
    deadline = time.monotonic() + timeout
    missing = set(instance_ids)
    while missing:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"agents of {', '.join(sorted(missing))} shipped nothing in {timeout:.0f}s; "
                f"see {world.workdir}/nodes/<instance-id>/agent.log"
            )
        time.sleep(0.25)
        with contextlib.suppress(logs.exceptions.ResourceNotFoundException):
            for page in logs.get_paginator("filter_log_events").paginate(
                logGroupName=world.classifier_log_group
            ):
                missing -= {i for i in missing for e in page["events"] if i in e["message"]}
