"""The chart's objects as a real kube-apiserver takes them: the namespaced ones (but the
ServiceMonitor, whose CRD a bare API server lacks) pass the server's validation and
admission, created with server-side dry run, and the remediator's RBAC the local cluster
runs with (lambdas/kube/rbac.yaml, applied when it starts) is the chart's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, utils

from tests.support.helm import SCRAPED, documents, helm_binary, render

pytestmark = pytest.mark.kube

NAMESPACED = {"ServiceAccount", "DaemonSet", "Service"}
"""What the chart renders into its namespace, but the ServiceMonitor."""
PRIVILEGED = "spec.template.spec.containers[0].securityContext.privileged"
IRSA = {"serviceAccount.annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}}


def refused_fields(error: utils.FailToCreateError) -> list[str]:
    """The fields the server refused, over every object it refused."""
    bodies = [json.loads(failure.body) for failure in error.api_exceptions]
    return [cause["field"] for body in bodies for cause in body["details"]["causes"]]


def dry_run_create(api: client.ApiClient, objects: list[dict[str, Any]]) -> list[str]:
    created = utils.create_from_yaml(api, yaml_objects=objects, dry_run="All")
    return sorted(type(o).__name__ for group in created for o in group)


def test_the_api_server_accepts_what_the_chart_renders(
    admin: client.ApiClient, namespace: str
) -> None:
    helm: Path | None = helm_binary()
    if helm is None:
        pytest.skip("no helm (tests/support/helm.py says where it is looked for)")
    rendered = documents(render(helm, SCRAPED, json_values=IRSA, namespace=namespace))
    try:
        kinds = dry_run_create(admin, [d for d in rendered if d["kind"] in NAMESPACED])
    except utils.FailToCreateError as refused:
        # An API server without --allow-privileged (EKS's allows it) refuses the privileged
        # container and nothing else; the rest of the DaemonSet is checked unprivileged.
        assert refused_fields(refused) == [PRIVILEGED]
        unprivileged = render(
            helm,
            SCRAPED,
            json_values={**IRSA, "securityContext.privileged": False},
            namespace=namespace,
        )
        kinds = dry_run_create(
            admin, [d for d in documents(unprivileged) if d["kind"] in NAMESPACED]
        )
    assert kinds == ["V1DaemonSet", "V1Service", "V1ServiceAccount"]
    rbac = client.RbacAuthorizationV1Api(admin)
    live = {
        "ClusterRole": rbac.read_cluster_role("nodemedic-remediator"),
        "ClusterRoleBinding": rbac.read_cluster_role_binding("nodemedic-remediator"),
    }
    for document in (d for d in rendered if d["kind"] in live):
        served = admin.sanitize_for_serialization(live[document["kind"]])
        for field in ("rules", "roleRef", "subjects"):
            assert served.get(field) == document.get(field), (document["kind"], field)
