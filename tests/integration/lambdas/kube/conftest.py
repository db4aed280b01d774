"""A real kube-apiserver with simulated kubelets, shared by the session
(``tests.support.kube_fixtures``); each test gets fresh nodes and a namespace.

The kube Lambda runs in-process as the ``nodemedic:remediator`` group, so every test also
checks that lambdas/kube/rbac.yaml grants what the op needs.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from lambdas.kube.handler import handler
from tests.support.kube import Invoke, Node
from tests.support.lambda_context import lambda_context
from world.kube.kubeapi import LocalCluster
from world.kube.kubelet import SimulatedKubelet

_numbers = itertools.count(1)


@pytest.fixture
def invoke(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """The Lambda handler with the remediator's kubeconfig, as the local mode runs it."""
    monkeypatch.setenv("KUBECONFIG", str(cluster.remediator_kubeconfig))
    context = lambda_context("kube", memory_mb=512, timeout_seconds=60)
    return lambda event: handler(event, context)


@pytest.fixture
def new_node(kubelet: SimulatedKubelet) -> Iterator[Callable[..., Node]]:
    """Registers a fresh GPU node; keyword arguments go to ``SimulatedKubelet.register``.
    The nodes are deleted after the test: the apiserver is the session's, and a node left
    behind is one more in every later test's listing (silent, stranded, tainted)."""
    made: list[Node] = []

    def make(**kwargs: Any) -> Node:
        number = next(_numbers)
        node = Node(f"ip-10-0-7-{number}.ec2.internal", f"i-0{secrets.token_hex(8)}")
        kwargs.setdefault("devices", {"nvidia.com/gpu": "8"})
        kubelet.register(node.name, node.instance_id, **kwargs)
        made.append(node)
        return node

    yield make
    for node in made:
        try:
            kubelet.core.delete_node(node.name)
        except client.ApiException as exc:
            if exc.status != 404:  # a test that deleted its node itself
                raise


@pytest.fixture
def node(new_node: Callable[..., Node]) -> Node:
    return new_node()
