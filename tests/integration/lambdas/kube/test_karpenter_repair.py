"""Karpenter's own node repair seen by the census: a Karpenter Deployment whose controller
runs with ``NodeRepair`` on (and ``RebootForRepair``, its reboots) is reported and warned of
in the kube Lambda's log, read with the remediator's permissions alone."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from lambdas.kube.karpenter_repair import KARPENTER_DEPLOYMENT
from tests.support.kube import Invoke

pytestmark = pytest.mark.kube

Install = Callable[[list[str], dict[str, str]], None]


@pytest.fixture
def install(admin: client.ApiClient) -> Iterator[Install]:
    """Writes Karpenter's Deployment into kube-system as its Helm chart does (container
    ``controller``, gates in ``FEATURE_GATES``); no replica runs (no controller here)."""
    apps = client.AppsV1Api(admin)
    made = False

    def put(args: list[str], env: dict[str, str]) -> None:
        nonlocal made
        labels = {"app.kubernetes.io/name": "karpenter"}
        body: dict[str, Any] = {
            "metadata": {"name": KARPENTER_DEPLOYMENT},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "controller",
                                "image": "karpenter/controller:1.15.0",
                                "args": args,
                                "env": [{"name": k, "value": v} for k, v in env.items()],
                            }
                        ]
                    },
                },
            },
        }
        if made:
            apps.replace_namespaced_deployment(KARPENTER_DEPLOYMENT, "kube-system", body)
        else:
            apps.create_namespaced_deployment("kube-system", body)
            made = True

    yield put
    if made:
        apps.delete_namespaced_deployment(KARPENTER_DEPLOYMENT, "kube-system")


def _warned(caplog: pytest.LogCaptureFixture, of: str = "NodeRepair") -> bool:
    warned = any(r.levelno == logging.WARNING and of in r.getMessage() for r in caplog.records)
    caplog.clear()
    return warned


def test_the_census_warns_while_karpenters_node_repair_is_on(
    invoke: Invoke, install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    census = {"op": "census", "cluster": "demo"}
    assert invoke(census)["karpenter_node_repair"] == []
    install(["--log-level=info"], {"FEATURE_GATES": "ReservedCapacity=true,NodeRepair=true"})
    caplog.clear()

    assert invoke(census)["karpenter_node_repair"] == [f"kube-system/{KARPENTER_DEPLOYMENT}"]
    assert _warned(caplog)

    install(["--feature-gates=NodeRepair=false"], {"FEATURE_GATES": "NodeRepair=true"})
    assert invoke(census)["karpenter_node_repair"] == []
    assert not _warned(caplog)


def test_the_census_names_the_gates_that_make_karpenter_reboot_nodes(
    invoke: Invoke, install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    census = {"op": "census", "cluster": "demo"}
    deployment = f"kube-system/{KARPENTER_DEPLOYMENT}"
    install([], {"AWS_FEATURE_GATES": "NodeClassCEL=false,RebootForRepair=true"})
    caplog.clear()

    assert invoke(census)["karpenter_repair_gates"] == {deployment: ["RebootForRepair"]}
    assert not _warned(caplog)  # no NodeRepair: Karpenter repairs nothing, reboots nothing

    install(
        ["--feature-gates=NodeRepair=true"],
        {"AWS_FEATURE_GATES": "RebootForRepair=true"},
    )
    answer = invoke(census)
    assert answer["karpenter_repair_gates"] == {deployment: ["NodeRepair", "RebootForRepair"]}
    assert answer["karpenter_node_repair"] == [deployment]
    assert _warned(caplog, of="reboots or replaces")

    install(
        ["--feature-gates=NodeRepair=true", "--aws-feature-gates=RebootForRepair=false"],
        {"AWS_FEATURE_GATES": "RebootForRepair=true"},
    )
    assert invoke(census)["karpenter_repair_gates"] == {deployment: ["NodeRepair"]}
    assert not _warned(caplog, of="reboot")
