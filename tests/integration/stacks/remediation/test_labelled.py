"""A node whose health label a person set to ``UnschedulablePendingReplacement`` is replaced
at the request reconcile's next tick (``stacks.remediation.machines.requests``), through the
breaker, the lock and the ledger like any manual request; a second tick starts nothing more,
and a node another remediation holds waits for its lock. The person is an allow-listed user
of the chart's label request policy, and the ledger names them as the API server
authenticated them.

The world is ``tests.support.flow``'s; the schedule's state machine is started as its rule
would start it (moto fires no schedule).
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from console.cli.history import records
from console.cli.remediations import entry
from nodemedic.contracts.kube import HEALTH_LABEL
from stacks.remediation.machines.requests import REQUESTS_SECONDS
from tests.support.flow import GPU, World, asg_instance
from tests.support.label_requests import OPERATOR, PATCHERS, ask, impersonating, label_policy
from tests.support.remediation import TICK, Pipeline
from world.kube.kubeapi import LocalCluster

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

REQUEST = "UnschedulablePendingReplacement"
ALICE = "alice@example.com"


def _label(world: World, operator: client.CoreV1Api, instance: str) -> None:
    """As ``kubectl label`` of the health label and ``requested-by`` in one write does."""
    ask(operator, world.nodes[instance], REQUEST, ALICE)


def _started(pipeline: Pipeline, world: World) -> list[str]:
    """One tick: the nodes of this test's it started."""
    ran = pipeline.run_as_rule(pipeline.requests, TICK)
    assert ran["status"] == "SUCCEEDED", ran
    started = json.loads(ran["output"])
    assert started["count"] == len(started["nodes"])
    return sorted(set(started["nodes"]) & set(world.nodes.values()))


def test_a_node_labelled_for_replacement_is_replaced_once_and_a_locked_one_waits(
    world: World, cluster: LocalCluster, admin: client.ApiClient
) -> None:
    pipeline = world.pipelines["demo"]
    sick, busy = world.group("p5-labelled", 2, **GPU)
    rule, (target,) = pipeline.rule("RemediationAftercareRequested")
    assert rule["ScheduleExpression"] == f"rate({REQUESTS_SECONDS // 60} minute)"
    assert target["Arn"] == pipeline.requests
    # busy: another remediation holds its lock (of a node of another group, say).
    pipeline.hold_lock(busy, expires_in=3600)
    operator = impersonating(cluster.kubeconfig, ALICE, PATCHERS)
    with label_policy(admin, allowedUsers=[ALICE], allowedGroups=[]):
        _label(world, operator, sick)
        _label(world, operator, busy)

        assert _started(pipeline, world) == [world.nodes[sick]]
        # The next tick, whatever the remediation got to by then, starts nothing new.
        _started(pipeline, world)

        (execution,) = pipeline.executions(sick)
        assert pipeline.executions(busy) == [], "a node another remediation holds waits"
        ended = pipeline.finish(execution)
        assert ended["status"] == "SUCCEEDED", ended
        assert asg_instance(sick)["HealthStatus"].upper() == "UNHEALTHY"
        assert world.node(sick) is None, "the replaced node's Node is deleted"
        (record,) = records(pipeline.dynamodb, pipeline.table, sick)
        history = entry(record)
        assert (history["outcome"], history["source"], history["fault_id"]) == (
            "replaced",
            "manual",
            "manual-replace",
        )
        assert history["triggered_by"] == ALICE
        assert (
            history["request_reason"]
            == f"{REQUEST} (label {HEALTH_LABEL}, field manager {OPERATOR})"
        )
        assert {"marking", "draining", "replacing"} <= {s["step"] for s in history["steps"]}
        assert [m["subject"] for m in pipeline.messages(sick)][-1] == f"nodemedic replaced: {sick}"

        # Once its lock is free, the waiting request starts at the next tick.
        pipeline.dynamodb.delete_item(
            TableName=pipeline.table, Key={"pk": {"S": busy}, "sk": {"S": "inflight"}}
        )
        assert _started(pipeline, world) == [world.nodes[busy]]
        (waited,) = pipeline.executions(busy)
        assert pipeline.finish(waited)["status"] == "SUCCEEDED"
        assert len(pipeline.executions(sick)) == 1
