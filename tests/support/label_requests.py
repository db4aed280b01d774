"""Label requests as people and kubelets write them, and the chart's admission policy that
judges them (``labelRequests``), on the real kube-apiserver.

Who writes is impersonated by cluster-admin (``Impersonate-User``/``Impersonate-Group``), so
the API server authenticates the writer as that user, as EKS does a kubelet or an operator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, config

from nodemedic.contracts.kube import HEALTH_LABEL, NODE_USER_PREFIX, REQUESTED_BY_ANNOTATION
from tests.support.admission import LABEL_POLICY, in_force, policy_documents

OPERATOR = "kubectl-label"
"""The field manager ``kubectl label`` writes as."""
PATCHERS = "test:node-patchers"
"""A group RBAC lets patch Nodes: the policy, not RBAC, must be what refuses its members."""
NODES_GROUP = "system:nodes"
PROBE_STATUS = "UnschedulablePendingReboot"


def impersonating(kubeconfig: Path, user: str, group: str) -> client.CoreV1Api:
    """The API as ``user`` in ``group`` (and ``system:authenticated``, which the API server
    adds), through cluster-admin's kubeconfig."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    api.set_default_header("Impersonate-User", user)
    api.set_default_header("Impersonate-Group", group)
    return client.CoreV1Api(api)


def kubelet_of(kubeconfig: Path, node: str) -> client.CoreV1Api:
    """The API as ``node``'s kubelet authenticates: ``system:node:<name>``, ``system:nodes``."""
    return impersonating(kubeconfig, f"{NODE_USER_PREFIX}{node}", NODES_GROUP)


def ask(core: client.CoreV1Api, node: str, status: str, by: str | None, **options: Any) -> None:
    """``kubectl label`` of the health label, with ``nodemedic.io/requested-by`` when ``by``."""
    metadata: dict[str, Any] = {"labels": {HEALTH_LABEL: status}}
    if by is not None:
        metadata["annotations"] = {REQUESTED_BY_ANNOTATION: by}
    core.patch_node(node, {"metadata": metadata}, field_manager=OPERATOR, **options)


def refusal(core: client.CoreV1Api, node: str, status: str, by: str | None) -> str:
    """The API server's message refusing the request; AssertionError where it was admitted."""
    try:
        ask(core, node, status, by)
    except client.ApiException as exc:
        assert exc.status in (403, 422), exc
        return str(exc.body)
    raise AssertionError(f"the request on {node} was admitted")


@contextlib.contextmanager
def label_policy(api: client.ApiClient, *, shipped: bool = False, **values: Any) -> Iterator[None]:
    """The label request policy in force on the API server (nodes and ``PATCHERS`` may patch
    Nodes meanwhile): the chart's rendered with ``labelRequests`` ``values``, or with
    ``shipped`` lambdas/kube/admission-policies.yaml's."""
    chart_values = {f"labelRequests.{k}": v for k, v in values.items()}
    made = [
        *policy_documents(LABEL_POLICY, shipped=shipped, values=chart_values),
        *_node_patchers(),
    ]
    core = client.CoreV1Api(api)
    with in_force(api, made, lambda: _probe(core)):
        yield


def _node_patchers() -> list[dict[str, Any]]:
    name = "test-node-patchers"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["get", "patch"]}
        ],
    }
    subjects = [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
        for group in (PATCHERS, NODES_GROUP)
    ]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    }
    return [role, binding]


def _probe(core: client.CoreV1Api) -> None:
    """A Node created asking for a reboot without the annotation, as a dry run: refused
    while the policy is in force."""
    probe = {"metadata": {"name": "label-policy-probe", "labels": {HEALTH_LABEL: PROBE_STATUS}}}
    core.create_node(probe, dry_run="All")
