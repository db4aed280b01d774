"""The ``deep_check`` op against the real API server: a verdict on a registering node."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from lambdas.kube.handler import BadRequest
from nodemedic.contracts import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    TAINT_KEY,
    UNSCHEDULABLE,
)
from tests.support.kube import Invoke, Node

pytestmark = pytest.mark.kube

USER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CHECKING = {"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}
REGISTERING = {HEALTH_LABEL: UNSCHEDULABLE, DEEP_CHECK_LABEL: "InProgress"}


def _registered(core: client.CoreV1Api, node: Node, *taints: dict[str, str]) -> None:
    core.patch_node(
        node.name, {"metadata": {"labels": REGISTERING}, "spec": {"taints": list(taints)}}
    )


def _verdict(node: Node, verdict: str) -> dict[str, object]:
    return {"op": "deep_check", "instance_id": node.instance_id, "verdict": verdict}


def test_a_pass_takes_the_health_check_taint_off_and_labels_the_node_schedulable(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    _registered(core, node, CHECKING, USER_TAINT)

    assert invoke(_verdict(node, "Passed")) == {
        "node": node.name,
        "changed": True,
        "uncordoned": False,
    }

    seen = core.read_node(node.name)
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert seen.metadata.labels[HEALTH_LABEL] == "Schedulable"


@pytest.mark.parametrize(
    "taints",
    [
        # Let in before (by an operator, or an earlier pass): a pass changes nothing.
        [USER_TAINT],
        # In remediation: a pass never gives back a node nodemedic took out.
        [CHECKING, {"key": TAINT_KEY, "value": "nvidia-xid-79", "effect": "NoSchedule"}],
    ],
)
def test_a_pass_leaves_a_node_not_waiting_for_it_as_it_is(
    invoke: Invoke, node: Node, core: client.CoreV1Api, taints: list[dict[str, str]]
) -> None:
    _registered(core, node, *taints)
    core.patch_node(node.name, {"spec": {"unschedulable": True}})
    before = core.read_node(node.name)

    assert invoke(_verdict(node, "Passed")) == {
        "node": node.name,
        "changed": False,
        "uncordoned": False,
    }

    seen = core.read_node(node.name)
    assert seen.spec.taints == before.spec.taints and seen.spec.unschedulable is True
    assert seen.metadata.labels == before.metadata.labels


def test_a_failure_labels_the_node_failed_and_keeps_it_out(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    _registered(core, node, CHECKING)

    invoke(_verdict(node, "Failed"))

    seen = core.read_node(node.name)
    assert [t.key for t in seen.spec.taints] == [DEEP_CHECK_TAINT_KEY]
    assert seen.metadata.labels[DEEP_CHECK_LABEL] == "Failed"
    assert seen.metadata.labels[HEALTH_LABEL] == UNSCHEDULABLE


def test_a_verdict_other_than_passed_or_failed_is_refused(
    invoke: Invoke, new_node: Callable[..., Node]
) -> None:
    with pytest.raises(BadRequest, match="field 'verdict'"):
        invoke(_verdict(new_node(), "NothingChecked"))
