"""A rebooted p5, g6 and trn1 with the chart's defaults and the default image
(``nodemedic demo --scenario reboot``): each is back in service within
``deep_check_timeout`` of coming back, judged by its deep check, and none is replaced for
a tool the image lacks."""

from __future__ import annotations

import json

import pytest

from nodemedic.contracts.health import (
    DCGMI_DIAG_CHECK,
    GPU_COUNT_CHECK,
    NCCL_ALL_REDUCE_CHECK,
    NCCOM_TEST_CHECK,
    NEURON_COUNT_CHECK,
    NEURON_LS_CHECK,
)
from nodemedic.contracts.kube import DEEP_CHECK_LABEL, DEEP_CHECK_TAINT_KEY
from nodemedic.settings import ClusterSettings
from tests.support.e2e import group_instances, run_scenario
from world.scenarios.kit import Result
from world.scenarios.rebootwalk import GIVEN_BACK, STEPS, TYPES
from world.scenarios.registry import SETTINGS, WORLDS
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
WORLD_SETTINGS = demo_settings(**SETTINGS["reboot"])
WORLD_OPTIONS = {**WORLDS["reboot"], "nodes": len(TYPES)}
DEFAULTS = ClusterSettings(name="defaults", node_groups=("any",))


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    found = run_scenario(world, "reboot")
    print(json.dumps((found.pacing or {}).get("walk"), indent=1))
    return found


def walks(result: Result) -> dict[str, dict[str, object]]:
    return {str(w["instance_type"]): w for w in (result.pacing or {})["walk"]}


def test_the_walk_runs_with_the_default_deep_check_settings(world: World) -> None:
    assert world.settings.post_reboot_deep_check is DEFAULTS.post_reboot_deep_check is True
    assert world.settings.deep_check_timeout == DEFAULTS.deep_check_timeout
    assert sorted(world.type_of(m.instance_id) for m in world.live_machines()) == sorted(TYPES)


def test_each_rebooted_node_is_back_in_service_within_the_deep_check_timeout(
    world: World, result: Result
) -> None:
    assert result.ok, (result.problems, [(r.machine.node, r.problems) for r in result.runs])
    found = walks(result)
    assert sorted(found) == sorted(TYPES)
    for instance_type, walk in found.items():
        seconds = walk["seconds"]
        assert isinstance(seconds, dict)
        times = [seconds[step] for step in STEPS]
        assert None not in times, (instance_type, seconds)
        assert times == sorted(times), (instance_type, seconds)
        after = walk["in_service_after_ready"]
        assert isinstance(after, float)
        assert after <= world.settings.deep_check_timeout, (instance_type, walk)
        assert walk["gate"] in GIVEN_BACK, walk


def test_none_is_replaced_and_each_ends_schedulable_at_its_new_boot(
    world: World, result: Result
) -> None:
    members = group_instances(world)
    for walk in walks(result).values():
        instance_id, node_name = str(walk["instance_id"]), str(walk["node"])
        assert walk["replaced"] is False
        assert world.instance_state(instance_id) == "running"
        assert members[instance_id]["LifecycleState"] == "InService"
        node = world.node(node_name)
        assert node is not None
        assert not node.spec.unschedulable
        assert DEEP_CHECK_TAINT_KEY not in {t.key for t in node.spec.taints or []}
        assert node.metadata.labels[DEEP_CHECK_LABEL] in GIVEN_BACK


def test_the_deep_check_judges_what_the_image_has_and_skips_what_it_lacks(
    result: Result,
) -> None:
    found = walks(result)
    for walk in found.values():
        assert walk["verdict"] == "Passed", walk
        subchecks = walk["subchecks"]
        assert isinstance(subchecks, dict)
        # Each of the image's missing tools is a skip with its reason, never a failure.
        assert not [s for s in subchecks.values() if "fail" in str(s)], walk
    missing = "skipped ToolMissing"
    # Each agent knows its type from IMDS, so how many devices its node must have.
    for gpu, gpus in (("p5.48xlarge", 8), ("g6.xlarge", 1)):
        subchecks = found[gpu]["subchecks"]
        assert isinstance(subchecks, dict)
        assert subchecks[GPU_COUNT_CHECK] == f"ok Healthy {gpus}/{gpus}", gpu
        assert subchecks[DCGMI_DIAG_CHECK] == subchecks[NCCL_ALL_REDUCE_CHECK] == missing, gpu
    trn1 = found["trn1.32xlarge"]["subchecks"]
    assert isinstance(trn1, dict)
    assert trn1[NEURON_COUNT_CHECK] == "ok Healthy 16/16"
    assert trn1[NEURON_LS_CHECK] == trn1[NCCOM_TEST_CHECK] == missing
    assert trn1[GPU_COUNT_CHECK] == "skipped NoNvidiaGpu"
