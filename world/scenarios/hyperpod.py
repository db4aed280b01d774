"""``nodemedic demo --scenario hyperpod``: the machines are the nodes of a SageMaker HyperPod
cluster whose own node recovery is off (``NodeRecovery None``), which the cluster's settings
list in ``hyperpod_clusters`` with ``hyperpod_repair`` ``when_recovery_off``. A reboot-class
fault (Xid 48) is rebooted through HyperPod's ``BatchRebootClusterNodes``, an Xid 79
replaced through ``BatchReplaceClusterNodes`` (HyperPod gives the node a new instance id),
and ``nodemedic history`` shows both with the substrate that repaired them."""

from __future__ import annotations

from typing import Any

from world.scenarios.kit import XID_48, Result, history_entries
from world.scenarios.verdict import each_judged
from world.timeline import Fault, FaultRun
from world.world import Say, World

CLUSTER = ("ml-cluster", "a1b2c3d4e5f6")
"""The HyperPod cluster's name and id (the id: the end of its ARN, as the settings take it)."""
RECOVERY = "None"
"""Its ``NodeRecovery``: off, so that nodemedic acts (``Automatic``: it defers)."""
XID_79 = Fault("xid", "79", "replace", "GPU has fallen off the bus (Xid 79)")
FAULTS = (XID_48, XID_79)
SUBSTRATE = "hyperpod"


def run_hyperpod(world: World, say: Say) -> Result:
    cluster = world.hyperpod or CLUSTER[0]
    before = _cluster_nodes(world, cluster)
    say("")
    say(
        f"HyperPod cluster {cluster}: {len(before)} nodes, NodeRecovery {RECOVERY}, "
        f"hyperpod_repair {world.settings.hyperpod_repair}"
    )
    runs = each_judged(world, FAULTS, say)
    problems = _membership(world, cluster, before, runs, say)
    problems += _history(world, runs, say)
    return Result(SUBSTRATE, runs, problems=problems)


def _cluster_nodes(world: World, cluster: str) -> set[str]:
    """The cluster's nodes' instance ids, as HyperPod lists them."""
    pages = world.aws("sagemaker").get_paginator("list_cluster_nodes").paginate(ClusterName=cluster)
    return {node["InstanceId"] for page in pages for node in page["ClusterNodeSummaries"]}


def _membership(
    world: World, cluster: str, before: set[str], runs: list[FaultRun], say: Say
) -> list[str]:
    """The rebooted node is still the cluster's; the replaced one is not, a new instance
    has its place and the cluster's size is unchanged."""
    after = _cluster_nodes(world, cluster)
    rebooted, replaced = (run.machine.instance_id for run in runs)
    newcomers = sorted(after - before)
    say("")
    say(f"HyperPod cluster {cluster}: {replaced} -> {', '.join(newcomers) or 'nothing'}")
    problems = []
    if rebooted not in after:
        problems.append(f"{rebooted} left {cluster} after a reboot")
    if replaced in after:
        problems.append(f"{replaced} is still a node of {cluster}")
    if len(newcomers) != 1 or len(after) != len(before):
        problems.append(f"{cluster} went from {len(before)} to {len(after)} nodes ({newcomers})")
    return problems


def _history(world: World, runs: list[FaultRun], say: Say) -> list[str]:
    """``nodemedic history`` names HyperPod as what repaired each node."""
    say("nodemedic history --cluster demo --format json")
    code, shown = history_entries(world)
    if code != 0:
        return [f"nodemedic history exited {code}"]
    problems = []
    for run in runs:
        found: list[dict[str, Any]] = [
            e for e in shown if e.get("instance_id") == run.machine.instance_id
        ]
        for entry in found:
            say(
                f"  {entry.get('instance_id')}  {entry.get('fault_id'):<16} "
                f"{entry.get('outcome')} ({entry.get('substrate')})"
            )
        if not any(
            e.get("outcome") == run.outcome and e.get("substrate") == SUBSTRATE for e in found
        ):
            problems.append(
                f"history of {run.machine.instance_id} has no {run.outcome} by {SUBSTRATE}"
            )
    return problems
