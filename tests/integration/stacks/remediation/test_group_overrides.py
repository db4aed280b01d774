"""A node group's own settings on moto and the real apiserver: an uncorrectable memory error
replaces its node by the catalog, but a training group reboots it instead, and only after
the group's wait before acting; another group of the same cluster replaces at once."""

from __future__ import annotations

from datetime import datetime

import pytest

from nodemedic.settings import ClusterSettings, parse_cluster
from tests.support.flow import GPU, World, asg_instance
from tests.support.remediation import FAST, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

WAIT = 3
GROUPS = parse_cluster(
    {
        "name": "groups",
        "node_groups": ["p5-training", "p5-serving"],
        "post_reboot_deep_check": False,
        **FAST,
        "group_overrides": {
            "p5-training": {
                "actions": {"edac-uncorrectable": "reboot"},
                "wait_before_acting": WAIT,
            }
        },
    }
)


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (GROUPS,)


def _remediated(world: World, instance_id: str) -> str:
    """The execution of the catalog's uncorrectable memory error, succeeded."""
    pipeline = world.pipelines["groups"]
    execution = pipeline.start(decision(instance_id, "edac-uncorrectable", cluster="groups"))
    result = pipeline.finish(execution)
    assert result["status"] == "SUCCEEDED", result
    return execution


def test_a_training_group_reboots_what_the_catalog_replaces_after_its_wait(world: World) -> None:
    gpu, _, _ = world.group("p5-training", 3, **GPU)

    execution = _remediated(world, gpu)

    pipeline = world.pipelines["groups"]
    (waited,) = pipeline.outputs(execution, "Wait before acting")
    assert waited["plan"]["action"] == "reboot"
    assert "by the setting actions['edac-uncorrectable']" in waited["plan"]["reason"]
    assert gpu in world.hypervisor.reboots
    (rebooted,) = pipeline.outputs(execution, "Reboot instance")
    marked = datetime.fromisoformat(waited["times"]["marked"]["at"])
    waited_for = datetime.fromisoformat(rebooted["times"]["rebooted"]["at"]) - marked
    assert waited_for.total_seconds() >= WAIT
    assert asg_instance(gpu)["LifecycleState"] == "InService"
    assert world.node(gpu) is not None


def test_another_group_of_the_cluster_replaces_at_once(world: World) -> None:
    gpu, _, _ = world.group("p5-serving", 3, **GPU)

    execution = _remediated(world, gpu)

    assert world.pipelines["groups"].outputs(execution, "Wait before acting") == []
    assert gpu not in world.hypervisor.reboots
    assert asg_instance(gpu)["LifecycleState"] == "Terminating"
