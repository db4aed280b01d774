"""Karpenter end to end (``nodemedic demo --scenario karpenter``): the training job's workers
run on nodes the real Karpenter controller launched for them (NodeClaims of the NodePool
listed in ``karpenter_nodepools``), each with an EC2 instance and an agent behind it. An
Xid 79 on one: nodemedic cordons and drains the node, deletes its NodeClaim, Karpenter
terminates the node and launches a new NodeClaim for the worker left Pending, which runs
there; no Auto Scaling group is touched, and the ledger, the mail and ``nodemedic history``
name Karpenter as the substrate."""

from __future__ import annotations

import pytest

from tests.support.e2e import group_instances, run_scenario
from world.nodepool import NODEPOOL
from world.scenarios.karpenter import NODES, nodeclaims
from world.scenarios.kit import Result, history_entries
from world.scenarios.registry import SETTINGS, WORLDS
from world.snapshot import render, snapshot
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow, pytest.mark.controllers]
WORLD_SETTINGS = demo_settings(**SETTINGS["karpenter"])
WORLD_OPTIONS = {**WORLDS["karpenter"], "nodes": 1}
"""One machine in the Auto Scaling group, running no worker: the workers are Karpenter's."""


@pytest.fixture(scope="module")
def before(world: World) -> dict[str, str]:
    """The NodeClaims before the scenario: one per worker, each naming its node."""
    return nodeclaims(world)


@pytest.fixture(scope="module")
def result(world: World, before: dict[str, str]) -> Result:
    return run_scenario(world, "karpenter")


def test_the_workers_run_on_karpenter_s_nodes_with_ec2_provider_ids(
    world: World, before: dict[str, str]
) -> None:
    assert len(before) == NODES and all(before.values())
    workers = world.job.nodes_running_workers()
    assert set(before.values()) <= set(workers)
    for node in before.values():
        found = world.node(node)
        assert found is not None
        assert found.metadata.labels["karpenter.sh/nodepool"] == NODEPOOL
        instance_id = found.spec.provider_id.rsplit("/", 1)[-1]
        assert found.spec.provider_id.startswith("aws:///us-east-1a/i-"), found.spec.provider_id
        assert instance_id in world.machines


def test_xid_79_replaced_through_karpenter(world: World, result: Result) -> None:
    assert result.ok, ([(r.fault.title, r.problems) for r in result.runs], result.problems)
    (run,) = result.runs
    assert run.outcome == "replaced"
    assert "Karpenter" in run.steps["acted"].detail
    assert world.instance_state(run.machine.instance_id) in ("shutting-down", "terminated")
    assert world.node(run.machine.node) is None
    assert run.machine.instance_id not in group_instances(world)


def test_karpenter_launched_a_new_nodeclaim_whose_node_runs_the_evicted_worker(
    world: World, before: dict[str, str], result: Result
) -> None:
    (run,) = result.runs
    after = nodeclaims(world)
    (replaced,) = [name for name, node in before.items() if node == run.machine.node]
    assert replaced not in after
    (new,) = [name for name in after if name not in before]
    evicted = {p.worker for p in world.job.placements if p.node == run.machine.node}
    assert world.job.nodes_running_workers().get(after[new]) in evicted


def test_history_and_mail_name_karpenter_as_the_substrate(world: World, result: Result) -> None:
    (run,) = result.runs
    code, shown = history_entries(world)
    assert code == 0
    (entry,) = [e for e in shown if e["instance_id"] == run.machine.instance_id]
    assert (entry["outcome"], entry["substrate"], entry["node_group"]) == (
        "replaced",
        "karpenter",
        NODEPOOL,
    ), entry
    mails = [m.body for m in world.inbox.about(run.machine.instance_id)]
    assert [(m["outcome"], m["substrate"]) for m in mails] == [("replaced", "karpenter")]


def test_the_final_state_lists_karpenter_s_instances_apart_from_the_group(
    world: World, result: Result
) -> None:
    (run,) = result.runs
    state = snapshot(world)
    aws = state["aws"]
    assert run.machine.instance_id not in {i["instance_id"] for i in aws["node_group"]["left"]}
    pool = {i["instance_id"]: i["state"] for i in aws["karpenter_nodepool"]}
    assert pool.pop(run.machine.instance_id) in ("shutting-down", "terminated")
    assert list(pool.values()) == ["running"] * NODES
    assert "AWS: the instances of Karpenter's NodeClaims" in render(state, since=run.written_at)
