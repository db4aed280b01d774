"""``nodemedic demo --scenario reset``: the GPU reset rung. An Xid 46 (NVIDIA's answer:
RESET_GPU) on a node running a worker of the training job, in a cluster with ``gpu_reset``
on and machines whose GPUs reset one at a time (``world.RESETTABLE_TYPE``): the node is
cordoned and drained, its worker evicted under the drain policy it carries, the GPU the line
names reset through the stack's SSM Command document (run against the node's simulated GPU,
``world.gpus``), and the node given back at the same boot, where the job's worker runs
again."""

from __future__ import annotations

from kubernetes import client

from nodemedic.remediate.drainpolicy import chosen, policy_of
from world.kit import Result, targets
from world.observe import Observer
from world.timeline import Fault, inject
from world.verdict import judged
from world.world import Machine, Say, World

XID_46 = Fault("xid", "46", "reset", "GPU stopped processing (Xid 46, NVIDIA: RESET_GPU)")


def run_reset(world: World, say: Say) -> Result:
    (machine,) = targets(world, 1)
    say("")
    say(
        f"{XID_46.title} on {machine.node} ({machine.instance_id}, {world.instance_type}); "
        f"expect: reset"
    )
    say(f"  its worker of {world.job.name} drains under the policy {_drain_policy(world, machine)}")
    run = inject(world, machine, XID_46)
    judged(world, Observer(world), run, say)
    return Result("reset", [run])


def _drain_policy(world: World, machine: Machine) -> str:
    """The drain policy in force for the job's pod on the machine, as the drain reads it:
    the pod's own, else its job's (``immediate`` where neither names one)."""
    (pod,) = [p for p in world.job.pods() if p.spec.node_name == machine.node]
    job = client.BatchV1Api(world.api).read_namespaced_job(world.job.name, world.job.namespace)
    own = {**(pod.metadata.labels or {}), **(pod.metadata.annotations or {})}
    return policy_of(chosen(own, job.metadata.annotations or {}))
