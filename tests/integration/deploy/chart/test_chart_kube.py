"""The chart's objects as a real kube-apiserver takes them: the namespaced ones (but the
ServiceMonitor, whose CRD a bare API server lacks), the privileged agent DaemonSet among
them, pass the server's validation and admission and are stored, and the remediator's and
job monitor's RBAC the local cluster runs with (lambdas/kube/rbac.yaml, applied when it
starts) is the chart's."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client, utils

from tests.support.helm import SCRAPED, render
from world.kube.chart import documents, helm_binary

pytestmark = pytest.mark.kube

NAMESPACED = {"ServiceAccount", "DaemonSet", "Service"}
"""What the chart renders into its namespace, but the ServiceMonitor."""
IRSA = {"serviceAccount.annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}}


def create(api: client.ApiClient, objects: list[dict[str, Any]]) -> list[str]:
    created = utils.create_from_yaml(api, yaml_objects=objects)
    return sorted(type(o).__name__ for group in created for o in group)


def test_the_api_server_accepts_what_the_chart_renders(
    admin: client.ApiClient, namespace: str
) -> None:
    values = {**SCRAPED, "jobMonitorRBAC.create": "true"}  # a cluster with job_monitoring on
    rendered = documents(render(helm_binary(), values, json_values=IRSA, namespace=namespace))
    kinds = create(admin, [d for d in rendered if d["kind"] in NAMESPACED])
    assert kinds == ["V1DaemonSet", "V1Service", "V1ServiceAccount"]
    # Kept privileged, as EKS allows it (the local API server too: --allow-privileged).
    (daemonset,) = client.AppsV1Api(admin).list_namespaced_daemon_set(namespace).items
    (agent,) = daemonset.spec.template.spec.containers
    assert agent.security_context.privileged is True
    rbac = client.RbacAuthorizationV1Api(admin)
    read = {
        "ClusterRole": rbac.read_cluster_role,
        "ClusterRoleBinding": rbac.read_cluster_role_binding,
    }
    roles = [d for d in rendered if d["kind"] in read]
    assert {d["metadata"]["name"] for d in roles} == {
        "nodemedic-remediator",
        "nodemedic-job-monitor",
    }
    for document in roles:
        served = admin.sanitize_for_serialization(
            read[document["kind"]](document["metadata"]["name"])
        )
        for field in ("rules", "roleRef", "subjects"):
            assert served.get(field) == document.get(field), (document["kind"], field)


def test_the_api_server_accepts_the_agent_that_publishes_its_pod_devices(
    admin: client.ApiClient, namespace: str
) -> None:
    """``agent.podDevices.enabled``: the DaemonSet with the kubelet's socket, the flags and
    the pod's own token (its credential:
    tests/integration/lambdas/kube/test_pod_devices_policy.py)."""
    values = {**SCRAPED, "agent.podDevices.enabled": "true"}
    rendered = documents(render(helm_binary(), values, json_values=IRSA, namespace=namespace))
    create(admin, [d for d in rendered if d["kind"] in NAMESPACED])
    (daemonset,) = client.AppsV1Api(admin).list_namespaced_daemon_set(namespace).items
    pod = daemonset.spec.template.spec
    assert pod.automount_service_account_token is True
    assert "pod-resources" in {v.name for v in pod.volumes}
