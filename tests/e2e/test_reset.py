"""The GPU reset rung end to end (``nodemedic demo --scenario reset``): an Xid 46 on a node
running a worker of the job, in a cluster with ``gpu_reset`` on and machines that can reset
one GPU, is answered by a reset through SSM, not a reboot: the node keeps its boot id, is
given back, and the job's worker, evicted by the drain, runs on it again. As many workers as
nodes, so the evicted worker can only come back on the reset node."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from agent.poddevices import FIELD_MANAGER
from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.support.e2e import run_scenario, workers_running_again
from world.scenarios.gpureset import BYSTANDER
from world.scenarios.kit import Result
from world.scenarios.registry import SETTINGS, WORLDS
from world.snapshot import render, snapshot
from world.world import NODE_GROUP, World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
NODES = 3
WORLD_SETTINGS = demo_settings(**SETTINGS["reset"])
WORLD_OPTIONS = {**WORLDS["reset"], "nodes": NODES, "workers": NODES}


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    return run_scenario(world, "reset")


def test_the_gpu_was_reset_and_the_node_given_back_without_a_reboot(
    world: World, result: Result
) -> None:
    (run,) = result.runs
    assert result.ok, (run.problems, result.problems)
    assert run.outcome == "reset"
    instance_id = run.machine.instance_id
    assert world.gpus.resets == [(instance_id, "Success")]
    assert world.machine_events(instance_id, "reboot") == []
    node = world.node(run.machine.node)
    assert node is not None
    assert node.status.node_info.boot_id == run.boot_id
    assert not node.spec.unschedulable


def test_the_evicted_worker_runs_again_on_the_reset_node(world: World, result: Result) -> None:
    (run,) = result.runs
    node = run.machine.node
    assert workers_running_again(world)[node] == ["Running"]
    back = [p for p in world.job.placements if p.node == node and p.at >= run.written_at]
    assert back, f"no worker was placed on {node} again after the line"


def test_a_pod_on_another_gpu_of_the_node_runs_on_through_the_reset(
    world: World, result: Result
) -> None:
    (run,) = result.runs
    core = client.CoreV1Api(world.api)
    bystander = core.read_namespaced_pod(BYSTANDER, world.job.namespace)
    assert bystander.spec.node_name == run.machine.node
    assert bystander.status.phase == "Running"
    assert bystander.metadata.deletion_timestamp is None
    assert bystander.status.start_time.timestamp() < run.written_at, "the same pod, never restarted"


def test_each_nodes_agent_published_its_device_record(world: World, result: Result) -> None:
    """From the simulated kubelet's PodResources socket, with the chart's credential: the
    record's writer is the agent, not the kubelet."""
    core = client.CoreV1Api(world.api)
    for machine in world.live_machines():
        node = core.read_node(machine.node)
        writers = {
            entry.manager
            for entry in node.metadata.managed_fields or []
            if POD_DEVICES_KEY in json.dumps(entry.fields_v1 or {})
        }
        assert writers == {FIELD_MANAGER}, (machine.node, writers)


def test_the_demo_s_final_state_shows_the_node_group(world: World, result: Result) -> None:
    state = snapshot(world)
    group = state["aws"]["node_group"]
    assert (group["name"], group["desired"], len(group["instances"])) == (NODE_GROUP, NODES, NODES)
    assert group["left"] == []
    assert "hyperpod_cluster" not in state["aws"]
    assert f"AWS: Auto Scaling group {NODE_GROUP} (desired {NODES})" in render(state, since=0.0)
