"""``nodemedic demo --scenario reset``: the GPU reset rung. An Xid 46 (NVIDIA's answer:
RESET_GPU) on a node running a worker of the training job, in a cluster with ``gpu_reset``
on and machines whose GPUs reset one at a time (``world.RESETTABLE_TYPE``): the node is
cordoned and drained, its worker evicted under the drain policy it carries, the GPU the line
names reset through the stack's SSM Command document (run against the node's simulated GPU,
``world.aws.gpus``), and the node given back at the same boot, where the job's worker runs
again, while a pod on another of its GPUs runs on through it."""

from __future__ import annotations

import json
import time

from kubernetes import client

from nodemedic.contracts.kube import POD_DEVICES_KEY
from nodemedic.remediate.drainpolicy import chosen, policy_of
from world.kube.workload import ONE_GPU
from world.observe import Observer
from world.scenarios.kit import Result, targets
from world.scenarios.verdict import judged
from world.timeline import Fault, inject
from world.world import Machine, Say, World

XID_46 = Fault("xid", "46", "reset", "GPU stopped processing (Xid 46, NVIDIA: RESET_GPU)")


BYSTANDER = "evaluation"
"""A pod of another team on another GPU of the reset node: the reset drains only the pods
on its own GPU (the Node's device record), so this one runs on through it."""


def run_reset(world: World, say: Say) -> Result:
    (machine,) = targets(world, 1)
    core = client.CoreV1Api(world.api)
    uid, gpus = _bystander(world, core, machine)
    say("")
    say(
        f"{XID_46.title} on {machine.node} ({machine.instance_id}, {world.instance_type}); "
        f"expect: reset"
    )
    say(f"  its worker of {world.job.name} drains under the policy {_drain_policy(world, machine)}")
    say(f"  {BYSTANDER}, a pod on another of its GPUs ({gpus}), is not drained")
    run = inject(world, machine, XID_46)
    judged(world, Observer(world), run, say)
    after = core.read_namespaced_pod(BYSTANDER, world.job.namespace)
    if after.metadata.uid == uid and after.status.phase == "Running":
        say(f"  {BYSTANDER} ran on through the reset")
        return Result("reset", [run])
    return Result("reset", [run], problems=[f"{BYSTANDER} was stopped by a GPU-level rung"])


def _bystander(world: World, core: client.CoreV1Api, machine: Machine) -> tuple[str, str]:
    """(uid, GPUs) of the ``BYSTANDER`` pod once the Node's device record names its GPU;
    made once the record names the worker's, so that the worker holds the GPU the line
    names (the first) and the bystander another."""
    namespace = world.job.namespace
    (worker,) = [p.metadata.name for p in world.job.pods() if p.spec.node_name == machine.node]
    _recorded(core, machine, f"{namespace}/{worker}")
    pod = core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": BYSTANDER},
            "spec": {
                "nodeName": machine.node,
                "containers": [{"name": "eval", "image": "eval:1", "resources": ONE_GPU}],
            },
        },
    )
    return pod.metadata.uid, ", ".join(_recorded(core, machine, f"{namespace}/{BYSTANDER}"))


def _recorded(core: client.CoreV1Api, machine: Machine, pod: str) -> list[str]:
    """The devices the Node's record names ``pod`` the holder of, once it names any."""
    deadline = time.monotonic() + RECORD_SECONDS
    while time.monotonic() < deadline:
        notes = core.read_node(machine.node).metadata.annotations or {}
        held: list[str] = json.loads(notes.get(POD_DEVICES_KEY) or "{}").get(pod, [])
        if held:
            return held
        time.sleep(0.1)
    raise RuntimeError(f"no GPU recorded for {pod} within {RECORD_SECONDS} s")


RECORD_SECONDS = 30.0
"""The simulated kubelet records a pod's GPU within a pass or two; this bounds a broken run."""


def _drain_policy(world: World, machine: Machine) -> str:
    """The drain policy in force for the job's pod on the machine, as the drain reads it:
    the pod's own, else its job's (``immediate`` where neither names one)."""
    (pod,) = [p for p in world.job.pods() if p.spec.node_name == machine.node]
    job = client.BatchV1Api(world.api).read_namespaced_job(world.job.name, world.job.namespace)
    own = {**(pod.metadata.labels or {}), **(pod.metadata.annotations or {})}
    return policy_of(chosen(own, job.metadata.annotations or {}))
