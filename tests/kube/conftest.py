"""A real kube-apiserver (v1.20.2, built and cached by scripts/build-kube.sh on first use)
with simulated kubelets, shared by the session; each test gets fresh nodes and a namespace.

The kube Lambda runs in-process as the ``nodemedic:remediator`` group, so every test also
checks that lambdas/kube/rbac.yaml grants what the op needs.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from kubernetes import client

from lambdas.kube.handler import handler
from nodemedic.local.kubeapi import LocalCluster, local_cluster
from nodemedic.local.kubelet import SimulatedKubelet
from tests.kube.world import Context, Node

Invoke = Callable[[dict[str, Any]], dict[str, Any]]
_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    workdir: Path = tmp_path_factory.mktemp("kube")
    with local_cluster(workdir) as running:
        print(f"local kube-apiserver ready in {running.started_in:.1f}s")
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
def invoke(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """The Lambda handler with the remediator's kubeconfig, as the local mode runs it."""
    monkeypatch.setenv("KUBECONFIG", str(cluster.remediator_kubeconfig))
    return lambda event: handler(event, cast(LambdaContext, Context()))


@pytest.fixture
def new_node(kubelet: SimulatedKubelet) -> Callable[..., Node]:
    """Registers a fresh GPU node; keyword arguments go to ``SimulatedKubelet.register``."""

    def make(**kwargs: Any) -> Node:
        number = next(_numbers)
        made = Node(f"ip-10-0-7-{number}.ec2.internal", f"i-0{secrets.token_hex(8)}")
        kwargs.setdefault("devices", {"nvidia.com/gpu": "8"})
        kubelet.register(made.name, made.instance_id, **kwargs)
        return made

    return make


@pytest.fixture
def node(new_node: Callable[..., Node]) -> Node:
    return new_node()


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"train-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)
