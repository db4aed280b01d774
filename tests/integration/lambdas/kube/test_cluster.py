"""The local control plane itself: the version EKS runs, real permissions, a real scheduler,
and nothing left running after it."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.support.kube import Node, running, wait_for
from world.kube.kubeapi import KUBE_VERSION, LocalCluster, local_cluster
from world.kube.kubelet import HOSTNAME_LABEL

pytestmark = pytest.mark.kube


def test_the_remediator_may_do_only_what_rbac_yaml_grants(cluster: LocalCluster) -> None:
    with cluster.api_client(cluster.remediator_kubeconfig) as api:
        core = client.CoreV1Api(api)
        assert core.list_node().items is not None
        forbidden: list[Callable[[], object]] = [
            lambda: core.list_namespaced_secret("kube-system"),
            lambda: core.create_namespaced_pod("default", {"metadata": {"name": "x"}}),
            lambda: core.delete_namespace("default"),
        ]
        for call in forbidden:
            with pytest.raises(client.ApiException) as refused:
                call()
            assert refused.value.status == 403


def test_the_apiserver_is_the_version_eks_runs_and_serves_policy_v1(
    cluster: LocalCluster,
) -> None:
    with cluster.api_client() as api:
        assert client.VersionApi(api).get_code().git_version == f"v{KUBE_VERSION}"
        versions = [v.version for v in client.PolicyApi(api).get_api_group().versions]
    assert versions == ["v1"]


def test_kube_scheduler_binds_a_pod_to_a_node_that_takes_it(
    core: client.CoreV1Api, new_node: Callable[..., Node], namespace: str
) -> None:
    cordoned, free = new_node(), new_node()
    core.patch_node(cordoned.name, {"spec": {"unschedulable": True}})
    ours = {"key": HOSTNAME_LABEL, "operator": "In", "values": [cordoned.name, free.name]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [ours]}]}
    spec = {
        "containers": [{"name": "main", "image": "trainer:1"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    }
    core.create_namespaced_pod(namespace, {"metadata": {"name": "placed"}, "spec": spec})

    wait_for(lambda: running(core, namespace, "placed"), what="the pod to run")
    pod = core.read_namespaced_pod("placed", namespace)
    assert pod.spec.node_name == free.name
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert scheduled.status == "True"
    events = core.list_namespaced_event(namespace, field_selector="involvedObject.name=placed")
    said = [(e.reason, e.reporting_component) for e in events.items]
    # On a busy machine the scheduler may meet the pod before its cache has the new free
    # node Ready, and says so (FailedScheduling) before it binds: it never binds elsewhere.
    assert said[-1] == ("Scheduled", "default-scheduler"), said
    assert set(said[:-1]) <= {("FailedScheduling", "default-scheduler")}, said
    assert events.items[-1].message.endswith(f"placed to {free.name}")


@pytest.mark.slow
def test_every_process_stops_when_the_block_fails(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), local_cluster(tmp_path) as running:
        processes = list(running.processes)
        port = int(running.server.rsplit(":", 1)[1])
        raise KeyboardInterrupt

    assert len(processes) == 4  # etcd, kube-apiserver, kube-controller-manager, kube-scheduler
    assert all(p.poll() is not None for p in processes)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
