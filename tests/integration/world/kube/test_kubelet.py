"""The simulated kubelet's adoption of a Node another component created (Karpenter's KWOK
provider does so) against the real apiserver: a report the API server refused is made
again on the next pass, as a kubelet's next heartbeat would make it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from world.kube.kubelet import SimulatedKubelet

pytestmark = pytest.mark.kube


@pytest.fixture
def created(core: client.CoreV1Api) -> Iterator[client.V1Node]:
    """A Node with no kubelet behind it and no Ready condition, as the provider creates one."""
    name = f"kwok-gpu-{secrets.token_hex(4)}"
    gpus = {"cpu": "96", "pods": "110", "nvidia.com/gpu": "8"}
    yield core.create_node(
        {"metadata": {"name": name}, "status": {"capacity": gpus, "allocatable": gpus}}
    )
    core.delete_node(name)


def _ready(core: client.CoreV1Api, name: str) -> bool:
    conditions = core.read_node_status(name).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def test_a_node_whose_first_report_was_refused_is_reported_ready_when_adopted_again(
    kubelet: SimulatedKubelet,
    core: client.CoreV1Api,
    created: client.V1Node,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    patch = kubelet.core.patch_node_status

    def refused(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(kubelet.core, "patch_node_status", patch)
        raise client.ApiException(status=429, reason="Too Many Requests")

    monkeypatch.setattr(kubelet.core, "patch_node_status", refused)
    with pytest.raises(client.ApiException):
        kubelet.adopt(created)
    assert not _ready(core, created.metadata.name)

    kubelet.adopt(created)

    assert _ready(core, created.metadata.name)
    kubelet.forget(created.metadata.name)
