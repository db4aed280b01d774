"""``nodemedic demo --scenario hyperpod``: the machines are the nodes of a SageMaker HyperPod
cluster whose own node recovery is off (``NodeRecovery None``), which the cluster's settings
list in ``hyperpod_clusters`` with ``hyperpod_repair`` ``when_recovery_off``. A reboot-class
fault (Xid 48) is rebooted through HyperPod's ``BatchRebootClusterNodes``, an Xid 79
replaced through ``BatchReplaceClusterNodes`` (HyperPod gives the node a new instance id).
Then HyperPod's own health monitoring agent reports ``NvidiaErrorReboot`` on a third node,
in its log group and stream: with ``hyperpod_events`` ``act`` the classifier's HyperPod
rules reboot it. ``nodemedic history`` shows each with the substrate that repaired it, the
last with its source, ``hyperpod``."""

from __future__ import annotations

import time
from typing import Any

from nodemedic.catalog import load_catalog
from nodemedic.contracts.substrates import (
    HYPERPOD_AGENT_STREAM_PREFIX,
    HYPERPOD_SOURCE,
    hyperpod_log_group,
)
from world.aws.hyperpod import GROUP
from world.observe import Observer
from world.scenarios.kit import XID_48, XID_79, Result, history_entries, targets
from world.scenarios.verdict import each_judged, judged
from world.timeline import Fault, FaultRun, Step
from world.world import Machine, Say, World

CLUSTER = ("ml-cluster", "a1b2c3d4e5f6")
"""The HyperPod cluster's name and id (the id: the end of its ARN, as the settings take it)."""
RECOVERY = "None"
"""Its ``NodeRecovery``: off, so that nodemedic acts (``Automatic``: it defers)."""
FAULTS = (XID_48, XID_79)
AGENT_REBOOT = Fault(
    "hyperpod",
    "NvidiaErrorReboot",
    "reboot",
    "HyperPod's health monitoring agent: NvidiaErrorReboot (XidHardwareFailure)",
)
AGENT_RULE = "hyperpod-nvidia-error-reboot"
"""The catalog's rule for the agent's detection; its example is the event as HyperPod's
sources show it (nodemedic/catalog/rules/hyperpod.yaml)."""
SUBSTRATE = "hyperpod"


def run_hyperpod(world: World, say: Say) -> Result:
    cluster = world.hyperpod
    if cluster is None:
        raise RuntimeError("the hyperpod scenario runs in a world started with hyperpod_recovery")
    before = _cluster_nodes(world, cluster)
    say("")
    say(
        f"HyperPod cluster {cluster}: {len(before)} nodes, NodeRecovery {RECOVERY}, "
        f"hyperpod_repair {world.settings.hyperpod_repair}"
    )
    runs = each_judged(world, FAULTS, say)
    used = {run.machine for run in runs}
    machine = next(m for m in targets(world, len(FAULTS) + 1) if m not in used)
    say("")
    say(
        f"{AGENT_REBOOT.title} on {machine.node} ({machine.instance_id}); "
        f"hyperpod_events {world.settings.hyperpod_events}; expect: {AGENT_REBOOT.expect}"
    )
    run = _detected(world, machine)
    judged(world, Observer(world), run, say)
    runs.append(run)
    problems = _membership(world, cluster, before, runs[: len(FAULTS)], say)
    problems += _history(world, runs, say)
    return Result(SUBSTRATE, runs, problems=problems)


def _detected(world: World, machine: Machine) -> FaultRun:
    """The agent's detection written into the cluster's log group, in the stream of the
    instance it names, as HyperPod's agent writes it."""
    name, cluster_id = world.settings.hyperpod_clusters[0]
    where = (
        hyperpod_log_group(name, cluster_id),
        f"{HYPERPOD_AGENT_STREAM_PREFIX}{GROUP}/{machine.instance_id}",
    )
    event = load_catalog().rule(AGENT_RULE).example
    logs = world.aws("logs")
    logs.create_log_stream(logGroupName=where[0], logStreamName=where[1])
    written = time.time()
    logs.put_log_events(
        logGroupName=where[0],
        logStreamName=where[1],
        logEvents=[{"timestamp": round(written * 1000), "message": event}],
    )
    seen = world.watch.latest(machine.instance_id)
    run = FaultRun(
        fault=AGENT_REBOOT,
        machine=machine,
        rule=AGENT_RULE,
        line=event,
        boot_id=seen.boot_id if seen else "",
        where=where,
    )
    run.steps["written"] = Step(written, f"{where[1]}: {event}")
    return run


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
                f"  {entry.get('instance_id')}  {entry.get('fault_id'):<28} "
                f"{entry.get('outcome')} ({entry.get('substrate')}), "
                f"source {entry.get('source')}"
            )
        source = HYPERPOD_SOURCE if run.where else None
        if not any(
            e.get("outcome") == run.outcome
            and e.get("substrate") == SUBSTRATE
            and source in (None, e.get("source"))
            for e in found
        ):
            problems.append(
                f"history of {run.machine.instance_id} has no {run.outcome} by {SUBSTRATE}"
            )
    return problems
