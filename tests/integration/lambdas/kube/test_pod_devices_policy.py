"""The agent's credential for the pod-devices record (the chart's ``agent.podDevices``: a
ClusterRole that may get and patch Nodes, narrowed by a ValidatingAdmissionPolicy) on the real
kube-apiserver, used as the agent uses it: a service-account token bound to the agent's pod on
its node. The agent may set ``nodemedic.io/pod-devices`` on its own Node and do nothing else;
nobody else is judged by the policy."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import HEALTH_LABEL, POD_DEVICES_KEY
from tests.support.kube import Invoke, Node
from tests.support.label_requests import kubelet_of, label_policy
from tests.support.pod_devices_policy import (
    NODE_NAME_EXTRA,
    POLICY_KINDS,
    agent_credential,
    as_agent,
    bound_agent,
    record,
    refusal,
    who,
    write,
)
from world.kube.kubeapi import LocalCluster
from world.kube.poddevices import CREDENTIAL_KINDS

pytestmark = pytest.mark.kube

OWNER = "example.com/owner"
"""An annotation an operator put on the Node."""
TAINT = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}


BEYOND_THE_RECORD: list[tuple[str, dict[str, Any]]] = [
    ("labels", {"metadata": {"labels": {HEALTH_LABEL: "Schedulable"}}}),
    ("spec", {"spec": {"taints": [TAINT]}}),
    ("spec", {"spec": {"unschedulable": True}}),
    ("other annotations", {"metadata": {"annotations": {OWNER: "agent"}}}),
    ("other annotations", {"metadata": {"annotations": {OWNER: None}}}),
    ("finalizers", {"metadata": {"finalizers": ["example.com/keep"]}}),
]
"""Writes the agent may not make on its own Node, alone or with the record, and what each
changes as the policy's refusal names it."""


def with_record(patch: dict[str, Any]) -> dict[str, Any]:
    metadata = patch.get("metadata", {})
    annotations = {
        **metadata.get("annotations", {}),
        **record("train-0")["metadata"]["annotations"],
    }
    return {**patch, "metadata": {**metadata, "annotations": annotations}}


def published(core: client.CoreV1Api, node: str) -> dict[str, list[str]] | None:
    found = (core.read_node(node).metadata.annotations or {}).get(POD_DEVICES_KEY)
    return None if found is None else dict(json.loads(found))


def test_a_token_bound_to_the_agents_pod_names_the_pods_node(
    admin: client.ApiClient, namespace: str, node: Node
) -> None:
    """What the policy rests on: this Kubernetes puts the node of the pod a token is bound to
    in the token's user extra (1.32 and later)."""
    with agent_credential(admin, namespace, node.name) as user:
        info = who(bound_agent(admin, user, node.name))
    assert info.username == user
    assert info.extra[NODE_NAME_EXTRA] == [node.name]


def test_the_agent_publishes_the_record_on_its_own_node_and_on_no_other(
    admin: client.ApiClient, core: client.CoreV1Api, namespace: str, new_node: Callable[..., Node]
) -> None:
    own, other = new_node(), new_node()
    others = published(core, other.name)
    with agent_credential(admin, namespace, own.name) as user:
        agent = bound_agent(admin, user, own.name)
        write(agent, own.name, record("train-0", "train-1"))
        said = refusal(agent, other.name, record("train-0"))
        # Its record may be taken off again, by the agent too.
        write(agent, own.name, {"metadata": {"annotations": {POD_DEVICES_KEY: None}}})
        write(agent, own.name, record("train-0"))
    assert f"agent on node {own.name} may write only its own Node, not {other.name}" in said
    assert published(core, own.name) == {"default/train-0": ["0"]}
    assert published(core, other.name) == others


def test_the_agent_changes_nothing_else_on_its_own_node(
    admin: client.ApiClient, core: client.CoreV1Api, namespace: str, node: Node
) -> None:
    core.patch_node(node.name, {"metadata": {"annotations": {OWNER: "ops"}}})
    before = core.read_node(node.name)
    with agent_credential(admin, namespace, node.name) as user:
        agent = bound_agent(admin, user, node.name)
        for changed, patch in BEYOND_THE_RECORD:
            for write in (patch, with_record(patch)):
                said = refusal(agent, node.name, write)
                assert f"this write also changes: {changed}" in said, write
    after = core.read_node(node.name)
    assert (after.metadata.labels, after.metadata.annotations, after.spec) == (
        before.metadata.labels,
        before.metadata.annotations,
        before.spec,
    )


def test_a_token_without_its_node_writes_nothing(
    admin: client.ApiClient, namespace: str, node: Node
) -> None:
    """A token of Kubernetes before 1.32 names no node (impersonated here: this version's
    bound tokens all do): the record is never published, and a GPU-level drain drains the
    whole node."""
    with agent_credential(admin, namespace, node.name) as user:
        said = refusal(as_agent(admin, user, None), node.name, record("train-0"))
        # A node name is honoured only as the API server authenticated it.
        write(as_agent(admin, user, node.name), node.name, record("train-0"))
    assert "names none" in said


def test_kubelets_operators_and_the_remediator_are_not_judged_by_it(
    cluster: LocalCluster,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    node: Node,
    *,
    invoke: Invoke,
) -> None:
    """With the chart's other policy in force too, as an install with both has them; the
    remediator runs as its group (``invoke``)."""
    with agent_credential(admin, namespace, node.name), label_policy(admin):
        kubelet_of(cluster.kubeconfig, node.name).patch_node(
            node.name, {"metadata": {"labels": {"example.com/rack": "r7"}}}
        )
        core.patch_node(node.name, {"spec": {"taints": [TAINT]}, **record("operator-0")})
        marked = invoke(
            {
                "op": "mark",
                "node": node.name,
                "fault_id": "nvidia-xid-79",
                "condition": "AcceleratedHardwareReady",
                "condition_status": "False",
                "reason": "NvidiaXid_79",
                "message": "",
                "health_status": "UnschedulablePendingReplacement",
                "cordon": True,
                "taint": True,
            }
        )
    assert marked["marked"] is True
    after = core.read_node(node.name)
    assert after.spec.unschedulable is True
    assert after.metadata.labels["example.com/rack"] == "r7"


def test_without_the_policy_the_agents_rbac_alone_would_write_any_node(
    admin: client.ApiClient, core: client.CoreV1Api, namespace: str, new_node: Callable[..., Node]
) -> None:
    """Why the policy: RBAC cannot name the agent's own Node nor one annotation."""
    own, other = new_node(), new_node()
    with agent_credential(admin, namespace, own.name, CREDENTIAL_KINDS - POLICY_KINDS) as user:
        write(bound_agent(admin, user, own.name), other.name, {"spec": {"taints": [TAINT]}})
    assert core.read_node(other.name).spec.taints[-1].key == TAINT["key"]
