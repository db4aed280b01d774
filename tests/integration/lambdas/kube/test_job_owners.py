"""Whose pods are a job's, on the real kube-apiserver: the job monitor and auto-resume take a
pod's lines as its job's by its controller owner reference (``job_of_pod``), which the API
server admits from anyone who may create pods in the namespace. The chart's job owner
policy (and lambdas/kube/admission-policies.yaml, for kubectl) lets only the job's
controller, as the API server authenticated it, make a pod a Job's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from kubernetes import client

from lambdas.kube.owners import job_of_pod
from tests.support.admission import JOB_OWNER_POLICY, in_force, policy_documents
from tests.support.kube import Node, bind_pod, owner, running, wait_for
from tests.support.label_requests import impersonating
from world.kube.kubeapi import LocalCluster

pytestmark = pytest.mark.kube

JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
"""The Job controller as EKS's kube-controller-manager authenticates it."""
TENANTS = "test:tenants"


@contextlib.contextmanager
def job_owner_policy(api: client.ApiClient, *, shipped: bool) -> Iterator[None]:
    """The policy in force while the block runs: enforced once a dry-run pod of a made-up Job,
    created by cluster-admin (no controller), is refused."""
    core = client.CoreV1Api(api)
    made_up = {"apiVersion": "batch/v1", "kind": "Job", "name": "probe", "uid": "0" * 36}
    probe = {
        "metadata": {
            "name": "job-owner-probe",
            "ownerReferences": [made_up | {"controller": True}],
        },
        "spec": {"containers": [{"name": "c", "image": "c"}]},
    }
    documents = policy_documents(JOB_OWNER_POLICY, shipped=shipped)
    assert documents, f"no {JOB_OWNER_POLICY} to put in force"
    with in_force(
        api, documents, lambda: core.create_namespaced_pod("default", probe, dry_run="All")
    ):
        yield


def tenant(core: client.CoreV1Api, namespace: str, user: str) -> None:
    """``user`` may create, read and patch pods in ``namespace``, as a tenant there may."""
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    name = f"{user}-pods"
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "patch"]}
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": [rule]})
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )


@pytest.mark.parametrize("shipped", [False, True], ids=["chart", "kubectl"])
def test_only_the_jobs_controller_makes_a_pod_the_jobs(
    cluster: LocalCluster,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    node: Node,
    *,
    shipped: bool,
) -> None:
    alices = owner(admin, namespace, "Job", "alice-llama-70b")
    tenant(core, namespace, "mallory")
    with job_owner_policy(admin, shipped=shipped):
        mallory = impersonating(cluster.kubeconfig, "mallory", TENANTS)
        with pytest.raises(client.ApiException, match="mallory may not make a pod a Job's"):
            bind_pod(mallory, namespace, "forged", node.name, owner=alices)
        # Nor make her own pod the job's afterwards.
        bind_pod(mallory, namespace, "hers", node.name)
        with pytest.raises(client.ApiException, match="may not make a pod a Job's") as refused:
            mallory.patch_namespaced_pod(
                "hers", namespace, {"metadata": {"ownerReferences": [alices]}}
            )
        assert refused.value.status == 403
        controller = impersonating(cluster.kubeconfig, JOB_CONTROLLER, "system:serviceaccounts")
        bind_pod(controller, namespace, "alice-llama-70b-0", node.name, owner=alices)
        # The kubelet's status writes on the job's pod are no change of owner.
        wait_for(
            lambda: running(core, namespace, "alice-llama-70b-0"), what="the job's pod running"
        )

    made = job_of_pod(core, namespace, "alice-llama-70b-0")
    assert made is not None and (made.name, made.uid) == ("alice-llama-70b", alices["uid"])
    assert job_of_pod(core, namespace, "hers") is None
