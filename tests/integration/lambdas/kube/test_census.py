"""The kube Lambda's ``census`` op against a real apiserver: Nodes per node group by health
status, as its answer and as the EMF lines CloudWatch turns into the ``Nodes`` metric."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import HEALTH_STATUSES
from nodemedic.contracts.metrics import NODES_METRIC
from tests.integration.lambdas.kube.test_nodes import mark_event
from tests.support.kube import Invoke, Node

pytestmark = pytest.mark.kube


def published(out: str, group: str) -> dict[str, float]:
    """Status → value of the ``Nodes`` datapoints of ``group`` in the Lambda's EMF lines."""
    found = {}
    for line in out.splitlines():
        document: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
        metrics = document.get("_aws", {}).get("CloudWatchMetrics", [{}])[0]
        if document.get("NodeGroup") == group and metrics.get("Metrics"):
            assert metrics["Dimensions"] == [["Cluster", "NodeGroup", "Status"]]
            assert metrics["Metrics"][0]["Name"] == NODES_METRIC
            assert document["Cluster"] == "demo"
            value = document[NODES_METRIC]  # EMF allows a number or an array of them
            found[document["Status"]] = sum(value) if isinstance(value, list) else value
    return found


def test_census_counts_each_group_by_health_status(
    invoke: Invoke,
    new_node: Callable[..., Node],
    core: client.CoreV1Api,
    capsys: pytest.CaptureFixture[str],
) -> None:
    group, other = f"census-{secrets.token_hex(3)}", f"census-{secrets.token_hex(3)}"
    replacing, _, cordoned, rebooting = (new_node(nodegroup=group) for _ in range(4))
    new_node(nodegroup=other)
    invoke(mark_event(replacing.name))
    invoke(mark_event(rebooting.name, health_status="UnschedulablePendingReboot"))
    # Cordoned by someone else: no health label, counted as out of service all the same.
    core.patch_node(cordoned.name, {"spec": {"unschedulable": True}})
    capsys.readouterr()

    answer = invoke({"op": "census", "cluster": "demo"})

    expected = {
        "Schedulable": 1,
        "Unschedulable": 1,
        "UnschedulablePendingReboot": 1,
        "UnschedulablePendingReplacement": 1,
    }
    assert answer["groups"][group] == expected
    assert answer["groups"][other] == {
        status: int(status == "Schedulable") for status in HEALTH_STATUSES
    }
    assert published(capsys.readouterr().out, group) == expected


def test_census_needs_the_cluster(invoke: Invoke) -> None:
    with pytest.raises(ValueError, match="cluster"):
        invoke({"op": "census"})
