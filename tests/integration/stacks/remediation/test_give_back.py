"""Giving a node back undoes only what nodemedic did, on moto and the real apiserver: a node
an operator had cordoned for maintenance stays cordoned once a fault on it is handled, with
the operator's taints and labels, whether the reboot gives it back at once or its
post-repair deep check does; a node nodemedic cordoned itself is uncordoned."""

from __future__ import annotations

import pytest
from kubernetes import client

from nodemedic.contracts.kube import CORDONED_ANNOTATION, DEEP_CHECK_LABEL, DEEP_CHECK_TAINT_KEY
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World, our_taints, ship_verdict
from tests.support.kube import wait_for
from tests.support.remediation import UNGATED, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

MAINTENANCE = {"key": "example.com/maintenance", "value": "bios", "effect": "NoSchedule"}
OPERATOR_LABEL = "example.com/maintenance-window"


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (UNGATED,)


def _cordon_for_maintenance(world: World, instance_id: str) -> None:
    """As ``kubectl cordon`` and ``kubectl taint``/``label`` by an operator do."""
    world.core.patch_node(
        world.nodes[instance_id],
        {
            "metadata": {"labels": {OPERATOR_LABEL: "tuesday"}},
            "spec": {"unschedulable": True, "taints": [MAINTENANCE]},
        },
        field_manager="kubectl-cordon",
    )


def _rebooted(world: World, cluster: str, instance_id: str) -> client.V1Node:
    record = decision(instance_id, "nvidia-xid-48", cluster=cluster)
    assert world.pipelines[cluster].run(record)["status"] == "SUCCEEDED"
    back = world.node(instance_id)
    assert back is not None
    return back


def _operators_still(node: client.V1Node) -> None:
    assert node.spec.unschedulable
    assert [t.key for t in node.spec.taints or []] == [MAINTENANCE["key"]]
    assert node.metadata.labels[OPERATOR_LABEL] == "tuesday"
    assert our_taints(node) == []
    assert CORDONED_ANNOTATION not in (node.metadata.annotations or {})


def test_a_node_cordoned_by_an_operator_stays_cordoned_after_its_reboot(world: World) -> None:
    gpu, _, _ = world.group("p5-maintenance", 3, **GPU)
    _cordon_for_maintenance(world, gpu)

    _operators_still(_rebooted(world, "ungated", gpu))


def test_a_node_cordoned_by_an_operator_stays_cordoned_after_its_deep_check_passes(
    world: World,
) -> None:
    gpu, _, _ = world.group("p5-maintenance-gated", 3, **GPU)
    _cordon_for_maintenance(world, gpu)
    held = _rebooted(world, "demo", gpu)
    assert held.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"

    ship_verdict(world, gpu, "ok", "Passed", signed=True)

    wait_for(
        lambda: (
            (n := world.node(gpu)) is not None and n.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
        ),
        what="the node's deep check passed",
    )
    given = world.node(gpu)
    assert given is not None
    _operators_still(given)


def test_a_node_nodemedic_cordoned_is_uncordoned_and_its_mark_gone(world: World) -> None:
    gpu, _, _ = world.group("p5-ours", 3, **GPU)

    back = _rebooted(world, "ungated", gpu)

    assert not back.spec.unschedulable
    assert not any(t.key == DEEP_CHECK_TAINT_KEY for t in back.spec.taints or [])
    assert CORDONED_ANNOTATION not in (back.metadata.annotations or {})
