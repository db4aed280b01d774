"""The ``requested`` op against the real API server: the Nodes whose health label a person
set to ask for a reboot or a replacement, naming themselves in ``nodemedic.io/requested-by``,
each with the manual decision that answers it, and none that nodemedic labelled or holds
itself, nobody vouched for, or a node asked for. (The chart's policy that makes that
annotation the authenticated writer is tested in test_label_policy.py.)"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import HEALTH_LABEL, MANUAL_SOURCE
from tests.integration.lambdas.kube.test_nodes import mark_event
from tests.support.kube import Invoke, Node
from tests.support.label_requests import OPERATOR, ask
from world.kube.kubelet import SimulatedKubelet

pytestmark = pytest.mark.kube

ALICE = "alice@example.com"


def _label(core: client.CoreV1Api, node: str, status: str) -> None:
    """As ``kubectl label`` of the health label and ``requested-by`` in one write does."""
    ask(core, node, status, ALICE)


def _requested(invoke: Invoke, *nodes: str) -> dict[str, dict[str, Any]]:
    """The op's answer for ``nodes`` (the API server is shared with other tests), by name."""
    answer = invoke({"op": "requested", "cluster": "demo"})
    return {found["node"]: found for found in answer["nodes"] if found["node"] in nodes}


def test_a_label_a_person_set_is_a_manual_request_seen_the_same_at_every_tick(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api
) -> None:
    replace, reboot, healthy = new_node(), new_node(), new_node()
    _label(core, replace.name, "UnschedulablePendingReplacement")
    _label(core, reboot.name, "UnschedulablePendingReboot")
    _label(core, healthy.name, "Schedulable")

    found = _requested(invoke, replace.name, reboot.name, healthy.name)

    assert set(found) == {replace.name, reboot.name}
    for node, action, status in (
        (replace, "replace", "UnschedulablePendingReplacement"),
        (reboot, "reboot", "UnschedulablePendingReboot"),
    ):
        request = found[node.name]
        assert request["instance_id"] == node.instance_id
        decision = request["decision"]
        assert (decision["cluster"], decision["instance_id"]) == ("demo", node.instance_id)
        assert (decision["action"], decision["fault_id"]) == (action, f"manual-{action}")
        assert decision["source"] == MANUAL_SOURCE
        assert decision["requested_by"] == ALICE
        assert decision["request_reason"] == (
            f"{status} (label {HEALTH_LABEL}, field manager {OPERATOR})"
        )
        assert decision["decision_id"].startswith(node.instance_id)
    # The next tick names the same executions: a request starts once.
    again = _requested(invoke, replace.name, reboot.name)
    assert {n: r["decision"]["decision_id"] for n, r in again.items()} == {
        n: r["decision"]["decision_id"] for n, r in found.items()
    }


def test_no_request_where_nodemedic_labelled_or_holds_the_node_or_it_is_no_ec2_instance(
    invoke: Invoke,
    new_node: Callable[..., Node],
    core: client.CoreV1Api,
    kubelet: SimulatedKubelet,
) -> None:
    monitored, held, asked = new_node(), new_node(), new_node()
    # nodemedic's own mark of a monitored node writes the same label value.
    invoke(mark_event(monitored.name, cordon=False, taint=False))
    # A node nodemedic acts on carries its taint, whoever set the label.
    _label(core, held.name, "UnschedulablePendingReplacement")
    invoke(mark_event(held.name, health_status="UnschedulablePendingReboot"))
    _label(core, held.name, "UnschedulablePendingReplacement")
    # A node whose providerID names no EC2 instance (EKS Fargate's) cannot be acted on, and
    # must not keep the other requests from being answered.
    fargate = f"ip-10-0-9-{secrets.randbelow(250)}.ec2.internal"
    kubelet.register(fargate, f"fargate-{fargate.split('.', maxsplit=1)[0]}")
    _label(core, fargate, "UnschedulablePendingReplacement")
    _label(core, asked.name, "UnschedulablePendingReboot")

    found = _requested(invoke, monitored.name, held.name, fargate, asked.name)

    assert set(found) == {asked.name}
    seen = core.read_node(monitored.name).metadata.labels[HEALTH_LABEL]
    assert seen == "UnschedulablePendingReplacement"


def test_no_request_where_nobody_or_a_node_is_named_as_who_asked(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api
) -> None:
    unnamed, by_node, asked = new_node(), new_node(), new_node()
    ask(core, unnamed.name, "UnschedulablePendingReplacement", None)
    ask(core, by_node.name, "UnschedulablePendingReboot", f"system:node:{by_node.name}")
    _label(core, asked.name, "UnschedulablePendingReboot")

    found = _requested(invoke, unnamed.name, by_node.name, asked.name)

    assert set(found) == {asked.name}
