"""The remediation tests' session: quick EC2 in moto and the acting cluster's template
(see ``tests.support.remediation``); the flow tests' world, one per module that asks for it
(``tests.support.flow``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client
from moto import mock_aws

from nodemedic.contracts.ledger import QUARANTINE_SK_PREFIX
from nodemedic.settings import ClusterSettings
from stacks.pipeline import stack_name
from stacks.synth import synth_template
from tests.support.flow import REBOOT_SECONDS, World
from tests.support.remediation import (
    ACTING,
    DRY,
    MOTO,
    REGION,
    UNSET,
    WATCH,
    Pipeline,
    acting_template,
)
from world.aws.cloudwatch import metrics_from_logs
from world.aws.gpus import Gpus, nodes_run_commands
from world.aws.hyperpod import create_log_groups
from world.aws.hypervisor import Hypervisor, machines
from world.aws.inprocess import handlers_in_process
from world.aws.motopatch import atomic_writes
from world.aws.stack import QUICK_EC2, deploy
from world.aws.stepfunctions import (
    definitions_parsed_once,
    final_stops,
    runtime_causes,
    start_executions,
)
from world.kube.kubeapi import LocalCluster
from world.kube.kubelet import SimulatedKubelet
from world.kube.watch import NodeWatch


@pytest.fixture(scope="session", autouse=True)
def quick_ec2() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in QUICK_EC2.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def default_template() -> dict[str, Any]:
    return acting_template()


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    """Clusters besides the usual four that a module's world deploys (a module overrides
    this): each costs a synth and a deployment."""
    return ()


@pytest.fixture(scope="module")
def world(
    cluster: LocalCluster,
    core: client.CoreV1Api,
    kubelet: SimulatedKubelet,
    extra_clusters: tuple[ClusterSettings, ...],
) -> Iterator[World]:
    nodes: dict[str, str] = {}
    gpus = Gpus()
    hypervisor = Hypervisor(
        on_reboot=lambda instance: kubelet.reboot(nodes[instance], down_seconds=REBOOT_SECONDS),
        # The machine is gone; the state machine deletes its Node.
        on_power_off=lambda instance: None,
    )
    with (
        mock_aws(config=MOTO),
        handlers_in_process(),
        metrics_from_logs(),
        atomic_writes(),
        final_stops(),
        runtime_causes(),
        start_executions(),
        definitions_parsed_once(),
        pytest.MonkeyPatch.context() as env,
        machines(hypervisor),
        nodes_run_commands(gpus),
    ):
        env.setenv("KUBECONFIG", str(cluster.remediator_kubeconfig))
        # The world's one region for every client the tests and handlers make, as the moto
        # server's world has it: a boto3 session reads the environment it was made under,
        # and one made outside a function's overlay must not go without a region.
        env.setenv("AWS_DEFAULT_REGION", REGION)
        logs = boto3.client("logs", region_name=REGION)
        for settings in extra_clusters:
            create_log_groups(logs, settings.hyperpod_clusters)
        pipelines = {
            s.name: Pipeline(deploy(synth_template(s), stack_name=stack_name(s)))
            for s in (ACTING, WATCH, DRY, UNSET, *extra_clusters)
        }
        watch = NodeWatch(cluster.api_client).start()
        try:
            yield World(pipelines, core, kubelet, hypervisor, watch, nodes, gpus=gpus)
        finally:
            watch.stop()


@pytest.fixture
def own_nodes(world: World) -> Iterator[None]:
    """The Nodes a test registered are gone after it (those its remediation left), and so
    are the quarantine windows its decisions joined: the cluster's share is of the Nodes
    there are, which are the next test's alone, and a window is the clock's, which the next
    test may start in (its quarantines were refused, failing tests on the clock)."""
    before = set(world.nodes)
    yield
    for instance_id in set(world.nodes) - before:
        if world.node(instance_id) is not None:
            world.core.delete_node(world.nodes[instance_id])
    for pipeline in world.pipelines.values():
        _forget_quarantines(pipeline)


def _forget_quarantines(pipeline: Pipeline) -> None:
    pages = pipeline.dynamodb.get_paginator("scan").paginate(
        TableName=pipeline.table,
        FilterExpression="begins_with(sk, :window)",
        ExpressionAttributeValues={":window": {"S": QUARANTINE_SK_PREFIX}},
        ProjectionExpression="pk, sk",
    )
    for page in pages:
        for key in page["Items"]:
            pipeline.dynamodb.delete_item(TableName=pipeline.table, Key=key)
