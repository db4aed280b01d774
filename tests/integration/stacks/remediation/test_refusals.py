"""An API server that refuses the remediator for a while, as one does when its admission
webhook's pods are down: the synthesized state machine retries the refused op with backoff
and jitter, the remediation goes through once the API server answers, and each refusal is
counted. Before, one retry a poll later was all, and the second refusal failed the
remediation."""

from __future__ import annotations

import pytest
from kubernetes import client

from nodemedic.contracts.kube import KUBE_UNAVAILABLE
from nodemedic.contracts.metrics import KUBE_REFUSED_METRIC
from tests.support.flow import NEURON, World, asg_instance
from tests.support.remediation import decision, total
from world.kube.kubeapi import LocalCluster
from world.kube.webhook import failing_webhook

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


def test_a_webhook_failing_the_remediators_writes_is_ridden_over_and_counted(
    world: World, admin: client.ApiClient, cluster: LocalCluster
) -> None:
    sick, _, _ = world.group("trn1-refused", 3, **NEURON)
    pipeline = world.pipelines["demo"]
    record = decision(sick)
    before = total("NodeMedic", KUBE_REFUSED_METRIC, Cluster="demo", Reason="500")

    with failing_webhook(admin, cluster.workdir / "certs", world.nodes[sick], refusals=3) as hook:
        execution = pipeline.start(record)
        result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED", result
    assert hook.refused == 3
    events = pipeline.sfn.get_execution_history(executionArn=execution)["events"]
    failed = [e.get("lambdaFunctionFailedEventDetails", {}).get("error") for e in events]
    refused = [error for error in failed if error == KUBE_UNAVAILABLE]
    assert len(refused) == 3, [e["type"] for e in events]
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", "replaced")
    assert asg_instance(sick)["HealthStatus"].upper() == "UNHEALTHY"
    assert total("NodeMedic", KUBE_REFUSED_METRIC, Cluster="demo", Reason="500") == before + 3
