"""HyperPod end to end (``nodemedic demo --scenario hyperpod``): the world's machines are the
nodes of a SageMaker HyperPod cluster with its own recovery off, listed in
``hyperpod_clusters`` with ``hyperpod_repair`` ``when_recovery_off``. An Xid 48 reboots its
node through ``BatchRebootClusterNodes``, an Xid 79 replaces its node through
``BatchReplaceClusterNodes``; neither touches an Auto Scaling group, and the ledger, the mail
and ``nodemedic history`` name HyperPod as the substrate. Then HyperPod's own health
monitoring agent's ``NvidiaErrorReboot``, written into the cluster's log group, reboots a
third node, and the history gives it the source ``hyperpod``."""

from __future__ import annotations

import pytest

from nodemedic.contracts.substrates import (
    HYPERPOD_AGENT_STREAM_PREFIX,
    HYPERPOD_SOURCE,
    hyperpod_log_group,
)
from tests.support.e2e import run_scenario
from world.scenarios.hyperpod import CLUSTER
from world.scenarios.kit import Result, history_entries
from world.scenarios.registry import SETTINGS, WORLDS
from world.snapshot import render, snapshot
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
NODES = 4
WORLD_SETTINGS = demo_settings(**SETTINGS["hyperpod"])
WORLD_OPTIONS = {**WORLDS["hyperpod"], "nodes": NODES, "workers": NODES}


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    return run_scenario(world, "hyperpod")


def _cluster_nodes(world: World) -> set[str]:
    listed = world.aws("sagemaker").list_cluster_nodes(ClusterName=CLUSTER[0])
    return {node["InstanceId"] for node in listed["ClusterNodeSummaries"]}


def test_xid_48_rebooted_and_xid_79_replaced_through_hyperpod(world: World, result: Result) -> None:
    assert result.ok, ([(r.fault.title, r.problems) for r in result.runs], result.problems)
    rebooted, replaced, _ = result.runs
    assert (rebooted.outcome, replaced.outcome) == ("rebooted", "replaced")
    assert world.machine_events(rebooted.machine.instance_id, "reboot")
    assert rebooted.machine.instance_id in _cluster_nodes(world)
    assert world.instance_state(replaced.machine.instance_id) in ("shutting-down", "terminated")
    assert world.aws("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []


def test_the_replaced_node_s_successor_joins_the_cluster_and_kubernetes(
    world: World, result: Result
) -> None:
    (_, replaced, _) = result.runs
    members = _cluster_nodes(world)
    assert replaced.machine.instance_id not in members
    assert len(members) == NODES
    (launched,) = [e for e in world.events if e.kind == "launched" and e.at >= replaced.written_at]
    assert launched.instance_id in members
    assert world.node(launched.detail) is not None


def test_the_timeline_names_hyperpod_s_calls(result: Result) -> None:
    rebooted, replaced, _ = result.runs
    assert "BatchRebootClusterNodes" in rebooted.steps["acted"].detail
    assert "BatchReplaceClusterNodes" in replaced.steps["acted"].detail


def test_history_and_mail_name_hyperpod_as_the_substrate(world: World, result: Result) -> None:
    code, shown = history_entries(world)
    assert code == 0
    for run in result.runs:
        (entry,) = [e for e in shown if e["instance_id"] == run.machine.instance_id]
        assert (entry["outcome"], entry["substrate"], entry["node_group"]) == (
            run.outcome,
            "hyperpod",
            CLUSTER[0],
        ), entry
        mails = [m.body for m in world.inbox.about(run.machine.instance_id)]
        assert [(m["outcome"], m["substrate"]) for m in mails] == [(run.outcome, "hyperpod")]


def test_hyperpod_s_own_detection_reboots_its_node_with_source_hyperpod(
    world: World, result: Result
) -> None:
    (*_, detected) = result.runs
    assert detected.ok, detected.problems
    name, cluster_id = CLUSTER
    assert detected.steps["shipped"].detail == (
        f"{hyperpod_log_group(name, cluster_id)} "
        f"{HYPERPOD_AGENT_STREAM_PREFIX}workers/{detected.machine.instance_id}"
    )
    assert "BatchRebootClusterNodes" in detected.steps["acted"].detail
    assert world.machine_events(detected.machine.instance_id, "reboot")
    code, shown = history_entries(world)
    assert code == 0
    (entry,) = [e for e in shown if e["instance_id"] == detected.machine.instance_id]
    assert (entry["source"], entry["fault_id"], entry["outcome"], entry["substrate"]) == (
        HYPERPOD_SOURCE,
        "hyperpod-nvidia-error-reboot",
        "rebooted",
        "hyperpod",
    ), entry


def test_the_demo_s_final_state_shows_the_hyperpod_cluster_not_a_node_group(
    world: World, result: Result
) -> None:
    (_, replaced, _) = result.runs
    state = snapshot(world)
    aws = state["aws"]
    assert aws["node_group"] is None
    cluster = aws["hyperpod_cluster"]
    assert cluster["name"] == CLUSTER[0]
    assert {i["instance_id"] for i in cluster["instances"]} == _cluster_nodes(world)
    assert [i["instance_id"] for i in cluster["left"]] == [replaced.machine.instance_id]
    shown = render(state, since=replaced.written_at)
    assert f"AWS: SageMaker HyperPod cluster {CLUSTER[0]}" in shown
