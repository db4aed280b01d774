"""The local Kubernetes the kube and remediation tests share: one real control plane per
session (kube-apiserver, kube-scheduler and kube-controller-manager of the version EKS runs,
``world.kube.kubeapi.KUBE_VERSION``, built and cached by world/kube/build-kube.sh on first use),
simulated kubelets, and a fresh namespace per test. A conftest imports these fixtures to
offer them."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from world.kube.kubeapi import LocalCluster, local_cluster
from world.kube.kubelet import SimulatedKubelet


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    workdir: Path = tmp_path_factory.mktemp("kube")
    with local_cluster(workdir) as running:
        print(f"local control plane ready in {running.started_in:.1f}s")
        yield running


@pytest.fixture(scope="session")
def admin(cluster: LocalCluster) -> Iterator[client.ApiClient]:
    with cluster.api_client() as api:
        yield api


@pytest.fixture(scope="session")
def core(admin: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(admin)


@pytest.fixture(scope="session")
def kubelet(admin: client.ApiClient) -> Iterator[SimulatedKubelet]:
    with SimulatedKubelet(admin) as running:
        yield running


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"train-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)
