"""Starting the local world: the whole nodemedic pipeline on one machine, with no AWS account.

- AWS is a moto server on loopback (``motoserver.py``), in this process so that the Lambda
  handlers run in it (``inprocess.py``), with Step Functions executing the state machine
  (its definition parsed once, ``stepfunctions.py``); ``motopatch.py`` names every change
  the world makes to moto. Into it goes the template ``cdk synth`` produces for the
  cluster (``stacks.synth``), deployed by ``world.aws.stack``; beside it an Auto
  Scaling node group of accelerator instances (``aws.node_group``: EKS owns node groups,
  the stack does not) and a queue subscribed to the notifications topic, the inbox a
  person would read (``inbox.py``). With ``hyperpod_recovery``, the machines are the nodes
  of a SageMaker HyperPod cluster instead (``hyperpod.py``), whose batch calls reboot and
  replace them, and the listed clusters' log groups exist before the stack subscribes to them.
  With ``karpenter_nodes``, the training job runs on a Karpenter NodePool instead: the real
  controller provisions a node for each worker, behind which the world runs an EC2
  instance and an agent (``nodepool.py``).
- Kubernetes is a real control plane (``kubeapi.local_cluster``: kube-apiserver,
  kube-scheduler, kube-controller-manager) with one Node per instance (``providerID
  aws:///<az>/<instance-id>``), simulated kubelets, a training job spread over the nodes
  with its PodDisruptionBudget (``workload.py``), and a watch that records every change to
  the Nodes (``watch.py``).
- Each instance runs a real ``nodemedic agent`` process (``agents.py``) following its
  kernel log file and shipping to the moto Logs endpoint. What moto's EC2 and Auto
  Scaling calls do to the machines is played by ``hypervisor.py``: a reboot brings the
  Node back with a new boot id and a new agent, an ``Unhealthy`` instance is terminated
  and its replacement joins the cluster as a new Node. An SSM command sent to an instance
  (the GPU reset) runs on this machine against the instance's simulated GPU (``gpus.py``).
Everything started is stopped on the way out, whatever ends the block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import boto3
from kubernetes import client

from agent.poddevices import GPU_RESOURCE
from nodemedic.contracts.jobs import application_log_group
from nodemedic.contracts.substrates import NODEPOOL_LABEL
from nodemedic.settings import ClusterSettings
from world.agents import AgentFleet, AgentSettings, PodDevices, chart_values
from world.agentsup import AGENTS_UP, wait_agents_up
from world.aws.cloudformation import Deployment
from world.aws.gpus import nodes_run_commands
from world.aws.hyperpod import create_log_groups, hyperpod_calls, hyperpod_machines
from world.aws.hypervisor import Hypervisor, machines
from world.aws.identity import MetadataService, local_authority
from world.aws.inbox import Inbox
from world.aws.motoserver import CREDENTIALS, REGION, moto_server
from world.aws.quotas import AwsLimits
from world.aws.spares import chosen, stand_by
from world.aws.stack import deploy, node_group, resource_count
from world.kube.kubeapi import (
    BINARIES,
    KUBE_VERSION,
    LocalCluster,
    binary_dir,
    built,
    ensure_binaries,
    local_cluster,
)
from world.kube.kubelet import SimulatedKubelet
from world.kube.kwok import kwok_kubelets
from world.kube.poddevices import install, write_credentials
from world.kube.watch import NodeWatch
from world.kube.workload import TrainingJob
from world.nodepool import NODEPOOL, karpenter_pool, provisioned
from world.world import (
    DEVICES,
    INSTANCE_TYPE,
    NODE_GROUP,
    Machine,
    Say,
    World,
    demo_settings,
    ec2_machine,
)

ZONE = "us-east-1a"
KARPENTER_LAUNCH = 300.0
"""How long Karpenter may take to launch the workers' nodes: seconds when idle, minutes on
a loaded 2-core machine."""
TERMINATE_SECONDS = 1.0
"""From ``Unhealthy`` to the group terminating the instance and launching its replacement."""


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
    instance_type: str = INSTANCE_TYPE,
    types: tuple[str, ...] = (),
    default_image: bool = False,
    hyperpod_recovery: str | None = None,
    karpenter_nodes: int = 0,
    kwok: bool = False,
    lambda_processes: bool = False,
    aws_limits: AwsLimits | None = None,
) -> Iterator[World]:
    """Start the world under ``workdir`` (logs of every process land there) and stop all of
    it on the way out; ``say`` reports progress. ``nodes`` in service, and the ``spares`` the
    settings ask of the group in Standby besides; ``agent_processes`` False starts no agent:
    the caller writes the nodes' streams itself (``bench/storm.py``'s 1,000 nodes);
    ``deep_checks``: ``World.deep_checks``; ``launch_seconds``: from ``Unhealthy`` to the
    replacement's Node joining; ``instance_type``: the group's (``world.DEVICES`` has
    each type's Node devices); ``types``, ``default_image``: ``World``'s (``types`` by the
    first machines, in launch order); ``hyperpod_recovery``: the machines are the nodes of the
    settings' first ``hyperpod_clusters`` entry, with that ``NodeRecovery``, in place of the
    Auto Scaling group's (None: the group's); ``karpenter_nodes``: the training job has that
    many workers, on nodes Karpenter provisions in the NodePool ``nodepool.NODEPOOL``, and the
    group's machines run none (0: the workers run on the group's machines); ``kwok``: KWOK
    runs the Nodes and their pods (``world.kube.kwok``, the 1,500-node world of
    ``bench/scale.py``), not the simulated kubelet; ``lambda_processes``: the Lambda
    handlers run in warm worker processes, many at once; ``aws_limits``: AWS's throttles and
    retries (both ``moto_server``'s)."""
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
        endpoint = stack.enter_context(
            moto_server(lambda_processes=lambda_processes, limits=aws_limits)
        )
        say(f"AWS: moto server on {endpoint}")

        # The AWS side (synth takes a while) is built while the control plane starts here:
        # the control plane's processes die with the thread that started them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="aws-side") as pool:
            aws_side: Future[tuple[Deployment, list[Machine]]] = pool.submit(
                _build_aws,
                settings,
                workdir,
                endpoint,
                nodes + spares,
                timings,
                instance_type=instance_type,
                hyperpod_recovery=hyperpod_recovery,
            )
            cluster = stack.enter_context(
                _control_plane(workdir, say, timings, jobs=settings.job_monitoring)
            )
        # Once the pool's thread is gone: a report reading the locals of a frame another
        # thread still runs can crash CPython 3.11 (python/cpython#111363).
        deployment, first_machines = aws_side.result()
        say(
            f"AWS: stack {deployment.stack_name} synthesized in {timings['synth']:.1f}s and "
            f"deployed in {timings['deploy']:.1f}s ({resource_count(deployment)}); "
            f"{_owner(settings, hyperpod_recovery)}: {len(first_machines)} x {instance_type}"
        )
        stack.enter_context(
            mock.patch.dict(os.environ, {"KUBECONFIG": str(cluster.remediator_kubeconfig)})
        )
        api = stack.enter_context(cluster.api_client())
        # Short: a unix socket's path is at most 107 bytes, and a workdir may be long.
        sockets = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nodemedic-")))
        kubelet = stack.enter_context(
            kwok_kubelets(cluster, api, workdir / "kwok")
            if kwok
            else SimulatedKubelet(api, pod_resources=sockets)
        )
        watch = NodeWatch(cluster.api_client).start()
        stack.callback(watch.stop)
        # The instances ``stand_by`` will make spares run no training worker.
        standing = chosen((m.instance_id for m in first_machines), spares)
        job = TrainingJob(
            api,
            workers=karpenter_nodes or min(workers, nodes),
            node_selector={NODEPOOL_LABEL: NODEPOOL} if karpenter_nodes else {},
        )
        agents = _agent_fleet(
            AgentSettings(
                cluster=settings.name,
                region=REGION,
                endpoint_url=endpoint,
                workdir=workdir / "nodes",
                environment={**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint},
                metadata=metadata.endpoint,
                deep_check_at_start=deep_checks,
                gpus=int(DEVICES[instance_type][GPU_RESOURCE]),
            ),
            api,
            cluster.server,
            kubelet,
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
            agent_processes=agent_processes,
            instance_type=instance_type,
            types=dict(zip((m.instance_id for m in first_machines), types, strict=False)),
            default_image=default_image,
            hyperpod=settings.hyperpod_clusters[0][0] if hyperpod_recovery else None,
        )
        stack.enter_context(nodes_run_commands(world.gpus))
        stack.enter_context(_owner_calls(world))
        boots = {m.instance_id: world.register(m).status.node_info.boot_id for m in first_machines}
        # On a NodePool, the workers wait Pending for the nodes Karpenter launches for them.
        job.create(
            []
            if karpenter_nodes
            else [m.node for m in first_machines if m.instance_id not in standing]
        )
        stack.callback(job.start().stop)
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
            wait_agents_up(world, list(boots), timeout=AGENTS_UP)
        stack.enter_context(_karpenter_workers(world, karpenter_nodes, say))
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
def _karpenter_workers(world: World, count: int, say: Say) -> Iterator[None]:
    """Karpenter running, once it launched a node for each of the ``count`` workers and
    their agents ship; nothing where ``count`` is 0."""
    if not count:
        yield
        return
    with karpenter_pool(world):
        pool = provisioned(world, count, timeout=KARPENTER_LAUNCH)
        wait_agents_up(world, pool, timeout=AGENTS_UP)
        say(f"Karpenter: NodePool {NODEPOOL} provisioned {', '.join(pool)} for the workers")
        yield


@contextlib.contextmanager
def _control_plane(
    workdir: Path, say: Say, timings: dict[str, float], *, jobs: bool
) -> Iterator[LocalCluster]:
    """``jobs``: the real Job controller runs too, for the simulated training's Jobs."""
    binaries = binary_dir()
    if not built(binaries):
        say(
            f"Kubernetes: building {KUBE_VERSION} ({', '.join(BINARIES)}) from source into "
            f"{binaries} (first use only; 15 to 25 minutes on 2 cores)..."
        )
        began = time.monotonic()
        ensure_binaries()
        timings["kube_build"] = time.monotonic() - began
        say(f"Kubernetes: built in {timings['kube_build']:.0f}s")
    with local_cluster(workdir / "kube", controllers=("job",) if jobs else ()) as cluster:
        timings["kube"] = cluster.started_in
        say(f"Kubernetes: control plane {KUBE_VERSION} ready in {cluster.started_in:.1f}s")
        yield cluster


def _build_aws(
    settings: ClusterSettings,
    workdir: Path,
    endpoint: str,
    size: int,
    timings: dict[str, float],
    *,
    instance_type: str,
    hyperpod_recovery: str | None,
) -> tuple[Deployment, list[Machine]]:
    from stacks.pipeline import stack_name
    from stacks.synth import synth_template

    began = time.monotonic()
    template = synth_template(settings)
    timings["synth"] = time.monotonic() - began
    began = time.monotonic()
    logs = boto3.client("logs", region_name=REGION, endpoint_url=endpoint)
    if settings.job_monitoring:
        # Fluent Bit (Container Insights) creates it on a real cluster; the stack imports it.
        logs.create_log_group(logGroupName=application_log_group(settings.name))
    create_log_groups(logs, settings.hyperpod_clusters)
    deployment = deploy(template, stack_name=stack_name(settings), endpoint_url=endpoint)
    timings["deploy"] = time.monotonic() - began
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    if hyperpod_recovery is not None:
        instance_ids = hyperpod_machines(
            ec2,
            boto3.client("sagemaker", region_name=REGION, endpoint_url=endpoint),
            settings.hyperpod_clusters[0][0],
            size,
            instance_type=instance_type,
            availability_zone=ZONE,
            node_recovery=hyperpod_recovery,
        )
    else:
        instance_ids = node_group(
            NODE_GROUP,
            size,
            region=REGION,
            endpoint_url=endpoint,
            instance_type=instance_type,
            availability_zone=ZONE,
        )
    return deployment, [ec2_machine(ec2, i) for i in instance_ids]


def _owner(settings: ClusterSettings, hyperpod_recovery: str | None) -> str:
    """What the machines are members of, as the start says it."""
    if hyperpod_recovery is None:
        return f"node group {NODE_GROUP}"
    return f"HyperPod cluster {settings.hyperpod_clusters[0][0]} (NodeRecovery {hyperpod_recovery})"


def _owner_calls(world: World) -> contextlib.AbstractContextManager[None]:
    """The calls of the machines' owner that moto lacks: HyperPod's batch calls, a node it
    replaced joining the world; the Auto Scaling group's are always answered."""
    if world.hyperpod is None:
        return contextlib.nullcontext()
    return hyperpod_calls(launched=lambda _, new: world.launched(new))


def _agent_fleet(
    settings: AgentSettings, api: client.ApiClient, server: str, kubelet: SimulatedKubelet
) -> AgentFleet:
    """The world's agents, each publishing its Node's device record from ``kubelet``'s
    sockets with the credential the chart gives it (``world.kube.poddevices``)."""
    account = install(api, chart_values(settings))
    credentials = functools.partial(write_credentials, api, account)
    publishing = PodDevices(server, kubelet.socket, credentials)
    return AgentFleet(dataclasses.replace(settings, pod_devices=publishing))
