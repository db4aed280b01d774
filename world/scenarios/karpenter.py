"""``nodemedic demo --scenario karpenter``: the training job's workers run on nodes the real
Karpenter controller launched for them, NodeClaims of the NodePool ``gpu``, which the
cluster's settings list in ``karpenter_nodepools``. An Xid 79 on one of them: nodemedic
cordons and drains the node, as it does every node, then deletes its NodeClaim; Karpenter
terminates the node and launches a new NodeClaim for the worker left Pending, which runs on
the new node. ``nodemedic history`` names Karpenter as what replaced it."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from nodemedic.contracts.substrates import (
    KARPENTER_GROUP,
    NODECLAIM_PLURAL,
    NODECLAIM_VERSION,
)
from world.nodepool import NODEPOOL
from world.scenarios.kit import FAULT_TIMEOUT, XID_79, Result, history_entries
from world.scenarios.verdict import each_judged
from world.timeline import FaultRun
from world.world import Say, World

SUBSTRATE = "karpenter"
NODES = 2
"""The NodeClaims the workers ask for: one per worker, two workers."""


def run_karpenter(world: World, say: Say) -> Result:
    before = nodeclaims(world)
    say("")
    say(f"Karpenter NodePool {NODEPOOL}: {_claims_line(before)}")
    (run,) = each_judged(world, (XID_79,), say)
    problems = (
        []
        if run.machine.instance_id in world.karpenter
        else [f"{run.machine.node} is not one of Karpenter's nodes"]
    )
    problems += _successor(world, before, run, say)
    problems += _history(world, run, say)
    return Result(SUBSTRATE, [run], problems=problems)


def nodeclaims(world: World) -> dict[str, str]:
    """The NodeClaims in the API, by name: the Node each names (``""`` until it has one)."""
    listed = client.CustomObjectsApi(world.api).list_cluster_custom_object(
        KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL
    )
    return {
        c["metadata"]["name"]: (c.get("status") or {}).get("nodeName", "") for c in listed["items"]
    }


def _successor(world: World, before: dict[str, str], run: FaultRun, say: Say) -> list[str]:
    """The replaced node's NodeClaim is gone and a new one's node runs the worker the
    drain evicted; waited for, since Karpenter launches for a pod it sees Pending."""
    worker = next((p.worker for p in world.job.placements if p.node == run.machine.node), None)
    deadline = time.monotonic() + FAULT_TIMEOUT
    while True:
        after = nodeclaims(world)
        new = {name: node for name, node in after.items() if name not in before and node}
        where = {n: w for n, w in world.job.nodes_running_workers().items() if n in new.values()}
        if worker in where.values() or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    say("")
    say(f"Karpenter NodePool {NODEPOOL}: {_claims_line(after)}")
    problems = []
    gone = [name for name, node in before.items() if node == run.machine.node]
    if any(name in after for name in gone):
        problems.append(f"the NodeClaim of {run.machine.node} ({', '.join(gone)}) is still there")
    if worker not in where.values():
        problems.append(f"worker {worker} runs on no new NodeClaim's node ({new or 'none new'})")
    else:
        (node,) = [n for n, w in where.items() if w == worker]
        say(f"  worker {worker} runs on {node}, of the new NodeClaim")
    return problems


def _claims_line(claims: dict[str, str]) -> str:
    return ", ".join(f"{name} ({node or 'launching'})" for name, node in sorted(claims.items()))


def _history(world: World, run: FaultRun, say: Say) -> list[str]:
    """``nodemedic history`` says the node was replaced by Karpenter."""
    say("nodemedic history --cluster demo --format json")
    code, shown = history_entries(world)
    if code != 0:
        return [f"nodemedic history exited {code}"]
    found: list[dict[str, Any]] = [
        e for e in shown if e.get("instance_id") == run.machine.instance_id
    ]
    for entry in found:
        say(
            f"  {entry.get('instance_id')}  {entry.get('fault_id'):<28} "
            f"{entry.get('outcome')} ({entry.get('substrate')}), NodePool {entry.get('node_group')}"
        )
    if not any((e.get("outcome"), e.get("substrate")) == ("replaced", SUBSTRATE) for e in found):
        return [f"history of {run.machine.instance_id} has no replaced ({SUBSTRATE})"]
    return []
