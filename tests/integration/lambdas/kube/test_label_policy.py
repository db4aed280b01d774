"""The chart's label request policy (``labelRequests``, a ValidatingAdmissionPolicy) on the
real kube-apiserver: a node's own identity may not ask for a repair, nor may anyone off the
allow-list, and an admitted request names its writer as the API server authenticated it,
which the ``requested`` op records as who asked."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from nodemedic.contracts.kube import HEALTH_LABEL, REQUESTED_BY_ANNOTATION
from tests.support.kube import Invoke, Node
from tests.support.label_requests import (
    PATCHERS,
    ask,
    impersonating,
    kubelet_of,
    label_policy,
    refusal,
)
from world.kube.kubeapi import LocalCluster

pytestmark = pytest.mark.kube


def test_with_the_default_allow_list_a_kubelet_is_refused_and_everyone_names_themself(
    cluster: LocalCluster,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    new_node: Callable[..., Node],
) -> None:
    own, other, asked = new_node(), new_node(), new_node()
    with label_policy(admin):
        kubelet = kubelet_of(cluster.kubeconfig, own.name)
        for node in (own, other):
            said = refusal(kubelet, node.name, "UnschedulablePendingReplacement", own.name)
            assert "a node may not ask nodemedic" in said
        # Nor may it name someone else as having asked on a node already labelled.
        ask(core, other.name, "UnschedulablePendingReboot", "admin")
        with pytest.raises(client.ApiException, match="a node may not ask"):
            kubelet.patch_node(
                other.name, {"metadata": {"annotations": {REQUESTED_BY_ANNOTATION: "bob"}}}
            )
        # Any other user RBAC lets patch Nodes may ask, naming themself and no one else.
        bob = impersonating(cluster.kubeconfig, "bob", PATCHERS)
        assert "set nodemedic.io/requested-by=bob" in refusal(
            bob, asked.name, "UnschedulablePendingReboot", None
        )
        assert "requested-by=bob" in refusal(bob, asked.name, "UnschedulablePendingReboot", "eve")
        ask(bob, asked.name, "UnschedulablePendingReboot", "bob")
        # Writes that ask for nothing are no business of the policy.
        kubelet.patch_node(own.name, {"metadata": {"labels": {"example.com/rack": "r7"}}})
        ask(bob, asked.name, "Schedulable", None)
    labels = core.read_node(own.name).metadata.labels
    assert HEALTH_LABEL not in labels


def test_only_the_allow_list_may_ask_and_the_request_records_the_authenticated_user(
    cluster: LocalCluster,
    admin: client.ApiClient,
    new_node: Callable[..., Node],
    invoke: Invoke,
) -> None:
    refused, asked = new_node(), new_node()
    with label_policy(admin, allowedUsers=["alice"], allowedGroups=[]):
        mallory = impersonating(cluster.kubeconfig, "mallory", PATCHERS)
        said = refusal(mallory, refused.name, "UnschedulablePendingReplacement", "mallory")
        assert "mallory is not on the allow-list" in said
        alice = impersonating(cluster.kubeconfig, "alice", PATCHERS)
        ask(alice, asked.name, "UnschedulablePendingReplacement", "alice")

        answer = invoke({"op": "requested", "cluster": "demo"})

    found = {n["node"]: n["decision"] for n in answer["nodes"]}
    assert refused.name not in found
    assert found[asked.name]["requested_by"] == "alice"
    assert found[asked.name]["action"] == "replace"


@pytest.mark.parametrize("shipped", [False, True], ids=["chart", "kubectl"])
def test_a_kubelet_cannot_ask_through_its_nodes_status(
    cluster: LocalCluster,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    new_node: Callable[..., Node],
    invoke: Invoke,
    *,
    shipped: bool,
) -> None:
    """A write to ``nodes/status`` keeps the labels and annotations it changes: the policy,
    as the chart installs it and as lambdas/kube/admission-policies.yaml ships it for
    kubectl, judges that subresource too, or a kubelet could ask for its own replacement."""
    own = new_node()
    asking = {
        "labels": {HEALTH_LABEL: "UnschedulablePendingReplacement"},
        "annotations": {REQUESTED_BY_ANNOTATION: "alice@example.com"},
    }
    with label_policy(admin, shipped=shipped):
        kubelet = kubelet_of(cluster.kubeconfig, own.name)
        with pytest.raises(client.ApiException, match="a node may not ask") as refused:
            kubelet.patch_node_status(own.name, {"metadata": asking})
        assert refused.value.status == 403
        # Its status is still its own to write.
        kubelet.patch_node_status(own.name, {"metadata": {"labels": {"example.com/rack": "r7"}}})
        answer = invoke({"op": "requested", "cluster": "demo"})

    assert own.name not in {n["node"] for n in answer["nodes"]}
    assert HEALTH_LABEL not in core.read_node(own.name).metadata.labels
