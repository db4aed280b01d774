"""Every way a remediation can end badly leaves its node accounted for: a failed step, an
execution stopped by hand or timed out, a node left out with no remediation at work on it.
And the breaker's sweep judges stale holders by its own clock.

The world is ``tests.support.flow``'s. moto neither sends Step Functions' status-change
events nor runs schedules nor starts a state machine target of EventBridge: where a rule
would start the cleanup or the reconcile, the test checks the rule moto holds (its pattern
matches the event, its target is that state machine) and starts it with the event itself.
"""

from __future__ import annotations

import json
import time
from typing import cast

import pytest
from kubernetes import client
from moto.events.models import EventPattern
from moto.events.utils import EventMessageType

from lambdas.kube import nodes
from nodemedic.contracts.kube import (
    FAILED_CONDITION,
    FAULT_REASON_LABEL,
    FAULT_TYPE_LABEL,
    TAINT_KEY,
)
from nodemedic.remediate import parking
from tests.support.flow import GPU, NEURON, World, asg_instance, condition, our_taints
from tests.support.kube import bind_pod, pdb, wait_for
from tests.support.remediation import (
    Pipeline,
    datapoints,
    decision,
    metric_names,
)

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

TAINT = f"{TAINT_KEY}=neuron-dma-error:NoSchedule"


def _breaker(pipeline: Pipeline, group: str) -> set[str]:
    return set((pipeline.item(f"group#{group}", "breaker") or {}).get("holders", []))


def _pod_under_two_budgets(
    admin: client.ApiClient, core: client.CoreV1Api, ns: str, node: str
) -> None:
    """A pod two PodDisruptionBudgets select: the Eviction API refuses it with HTTP 500, a
    misconfiguration ``kubectl drain`` fails on too."""
    app = {"app": "bert"}
    bind_pod(core, ns, "bert-0", node, labels=app)
    for name in ("bert-a", "bert-b"):
        pdb(admin, ns, name, app, maxUnavailable=1)


def _assert_left_out_and_counted(
    world: World, pipeline: Pipeline, instance: str, *, group: str, step: str, error: str
) -> None:
    """The node stays out, says why, and keeps its lock (parked) and breaker slot."""
    node = world.node(instance)
    assert node is not None
    assert (node.spec.unschedulable, our_taints(node)) == (True, [TAINT])
    labels = node.metadata.labels
    assert (labels[FAULT_TYPE_LABEL], labels[FAULT_REASON_LABEL]) == (
        "neuron-dma-error",
        f"{step}-failed",
    )
    failed = condition(node, FAILED_CONDITION)
    assert (failed.status, failed.reason) == ("True", error)
    assert f"stopped at {step}: {error}" in failed.message
    lock = pipeline.item(instance, "inflight")
    assert lock is not None, "the lock is kept: no new remediation starts on the node"
    assert (lock["failed_step"], lock["node_group"]) == (step, group)
    lease = int(lock["expires_at"]) - time.time()
    assert parking.LEASE_SECONDS - 60 < lease <= parking.LEASE_SECONDS
    assert instance in _breaker(pipeline, group), "the node stays counted by the breaker"
    (mail,) = [m for m in pipeline.messages(instance) if m["outcome"] == "failed"]
    assert mail["subject"] == f"nodemedic failed: {instance}"
    assert mail["stopped_at"] == step
    assert mail["summary"].endswith(f"stopped at {step}: {error}")
    assert "Remediations" in metric_names(
        "NodeMedic", Cluster="demo", NodeGroup=group, Action="replace", Outcome="failed"
    )


def test_a_step_failing_after_the_cordon_leaves_the_node_out_marked_and_counted(
    world: World, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    # Three nodes: the breaker admits one of them at a time.
    sick, other, _ = world.group("trn1-fail", 3, **NEURON)
    _pod_under_two_budgets(admin, core, namespace, world.nodes[sick])
    pipeline = world.pipelines["demo"]
    record = decision(sick)

    result = pipeline.run(record)

    assert (result["status"], result["error"]) == ("FAILED", "RemediationFailed")
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["failed_step"]) == ("failed", "draining")
    error = json.loads(ledger["error"])["Error"]
    _assert_left_out_and_counted(
        world, pipeline, sick, group="trn1-fail", step="draining", error=error
    )
    # The group's one slot is still the failed node's: the next decision waits for it.
    # Another fault: the same one on two of three nodes would be a fleet event.
    waiting = pipeline.start(decision(other, "neuron-hbm-uncorrectable-error"))
    wait_for(lambda: any(m["outcome"] == "held" for m in pipeline.messages(other)), what="hold")
    pipeline.sfn.stop_execution(executionArn=waiting)
    held = world.node(other)
    assert held is not None
    # Held, not repaired: its instance untouched, the node at most quarantined meanwhile
    # (the group's quarantine share allows it once the first one's window has turned).
    assert our_taints(held) in ([], [f"{TAINT_KEY}=neuron-hbm-uncorrectable-error:NoSchedule"])
    assert bool(held.spec.unschedulable) == bool(our_taints(held))
    assert asg_instance(other)["HealthStatus"] == "Healthy"


@pytest.mark.parametrize("status", ["ABORTED", "TIMED_OUT"])
def test_an_execution_stopped_midway_is_cleaned_up_like_a_failed_step(
    world: World, core: client.CoreV1Api, admin: client.ApiClient, namespace: str, status: str
) -> None:
    """A timeout (after ``policy.execution_timeout``, hours) is stood in for by a stop: the
    execution ends the same way, only the event's status differs."""
    group = f"trn1-{status.lower().replace('_', '-')}"
    sick, _, _ = world.group(group, 3, **NEURON)
    app = {"app": "gpt"}
    bind_pod(core, namespace, "gpt-0", world.nodes[sick], labels=app)
    pdb(admin, namespace, "gpt", app, minAvailable=1)  # the drain waits on it for minutes
    pipeline = world.pipelines["demo"]
    record = decision(sick)
    execution = pipeline.start(record)
    wait_for(lambda: (pipeline.ledger(record) or {}).get("state") == "draining", what="drain")

    pipeline.sfn.stop_execution(executionArn=execution)
    assert pipeline.finish(execution)["status"] == "ABORTED"
    event = pipeline.status_change(execution, status)
    rule, (target,) = pipeline.rule("RemediationAftercareStopped")
    assert EventPattern.load(rule["EventPattern"]).matches_event(cast(EventMessageType, event))
    assert target["Arn"] == pipeline.cleanup
    cleaned = pipeline.run_as_rule(pipeline.cleanup, event)

    assert cleaned["status"] == "SUCCEEDED", cleaned
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["failed_step"]) == ("failed", "draining")
    _assert_left_out_and_counted(world, pipeline, sick, group=group, step="draining", error=status)
    # Once done, a second cleanup of the same execution finds nothing left to do.
    again = pipeline.run_as_rule(pipeline.cleanup, event)
    assert again["status"] == "SUCCEEDED"
    assert len([m for m in pipeline.messages(sick) if m["outcome"] == "failed"]) == 1


def _taint(core: client.CoreV1Api, node: str, on: bool) -> None:
    """As nodemedic's mark does (``on``), or as a person giving the node back does."""
    taints = (
        [{"key": TAINT_KEY, "value": "neuron-dma-error", "effect": "NoSchedule"}] if on else None
    )
    core.patch_node(node, {"spec": {"unschedulable": on or None, "taints": taints}})


def test_the_reconcile_finds_the_nodes_left_out_and_keeps_the_failed_ones_counted(
    world: World, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    failed, busy, orphan, healthy = world.group("trn1-reconcile", 4, **NEURON)
    pipeline = world.pipelines["demo"]
    # failed: its remediation failed in the drain (its lock parked).
    _pod_under_two_budgets(admin, core, namespace, world.nodes[failed])
    assert pipeline.run(decision(failed))["status"] == "FAILED"
    # busy: a remediation is at work on it (its lock live; the group's one slot is the
    # failed node's, so it stands for one of another group).
    _taint(core, world.nodes[busy], on=True)
    pipeline.hold_lock(busy, expires_in=3600)
    # orphan: tainted by nodemedic with no lock at all (lost with its remediation).
    _taint(core, world.nodes[orphan], on=True)
    # Meanwhile the failed node's lease ran low and a sweep dropped it from the breaker.
    pipeline.dynamodb.update_item(
        TableName=pipeline.table,
        Key={"pk": {"S": failed}, "sk": {"S": "inflight"}},
        UpdateExpression="SET expires_at = :soon",
        ExpressionAttributeValues={":soon": {"N": str(int(time.time()) + 30)}},
    )
    pipeline.dynamodb.update_item(
        TableName=pipeline.table,
        Key={"pk": {"S": "group#trn1-reconcile"}, "sk": {"S": "breaker"}},
        UpdateExpression="DELETE holders :failed",
        ExpressionAttributeValues={":failed": {"SS": [failed]}},
    )
    rule, (target,) = pipeline.rule("RemediationAftercareSchedule")
    assert rule["ScheduleExpression"] == f"rate({parking.RECONCILE_SECONDS // 60} minutes)"
    assert target["Arn"] == pipeline.reconcile
    tick = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}

    first = pipeline.run_as_rule(pipeline.reconcile, tick)

    assert first["status"] == "SUCCEEDED", first
    stranded = json.loads(first["output"])
    ours = {world.nodes[i] for i in (failed, busy, orphan, healthy)}
    assert ours & set(stranded["nodes"]) == {world.nodes[failed], world.nodes[orphan]}
    assert stranded["count"] == len(stranded["nodes"])
    assert datapoints("NodeMedic", "StrandedNodes", Cluster="demo")[-1] == stranded["count"]
    renewed = int((pipeline.item(failed, "inflight") or {})["expires_at"])
    assert renewed - time.time() > parking.LEASE_SECONDS - 60, "the lease is renewed"
    assert failed in _breaker(pipeline, "trn1-reconcile"), "and the node counted again"

    # A person fixes the failed node and takes the taint off: nothing renews its lease now.
    _taint(core, world.nodes[failed], on=False)
    second = pipeline.run_as_rule(pipeline.reconcile, tick)

    assert world.nodes[failed] not in json.loads(second["output"])["nodes"]
    assert int((pipeline.item(failed, "inflight") or {})["expires_at"]) == renewed


def test_a_node_cleared_after_the_reconcile_listed_it_is_not_counted_stranded(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing is a snapshot, and a storm's locks take a while to read: a remediation
    that ends meanwhile clears its node and then releases its lock. Read then, the node has
    no lock, and no taint either: not stranded (a false page in every storm before)."""
    (done,) = world.group("trn1-cleared", 1, **NEURON)
    pipeline = world.pipelines["demo"]
    listing = nodes.tainted

    def when_listed(core: client.CoreV1Api, only: str | None = None) -> list[dict[str, str]]:
        found = listing(core, only)
        if only is None:  # taken while the remediation still held the node
            found.append(
                {"node": world.nodes[done], "instance_id": done, "fault_id": "neuron-dma-error"}
            )
        return found

    monkeypatch.setattr(nodes, "tainted", when_listed)
    tick = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}

    ran = pipeline.run_as_rule(pipeline.reconcile, tick)

    assert ran["status"] == "SUCCEEDED", ran
    assert world.nodes[done] not in json.loads(ran["output"])["nodes"]


def test_a_held_decision_sweeps_a_holder_whose_lock_ran_out_while_it_waited(
    world: World,
) -> None:
    # Two nodes: one slot. A stopped remediation of the first holds it, its lock still live.
    stopped, waiting = world.group("p5-sweep", 2, **GPU)
    pipeline = world.pipelines["demo"]
    pipeline.dynamodb.put_item(
        TableName=pipeline.table,
        Item={
            "pk": {"S": "group#p5-sweep"},
            "sk": {"S": "breaker"},
            "holders": {"SS": [stopped]},
        },
    )
    pipeline.hold_lock(stopped, expires_in=3600)
    record = decision(waiting, "nvidia-xid-79")
    execution = pipeline.start(record)
    wait_for(lambda: (pipeline.ledger(record) or {}).get("state") == "held", what="the hold")
    # The stopped remediation's lock runs out now: after the held decision planned, a
    # second before its first sweep.
    (planned,) = pipeline.outputs(execution, "Plan")
    pipeline.dynamodb.update_item(
        TableName=pipeline.table,
        Key={"pk": {"S": stopped}, "sk": {"S": "inflight"}},
        UpdateExpression="SET expires_at = :planned",
        ExpressionAttributeValues={":planned": {"N": str(planned["plan"]["now_epoch"])}},
    )

    # Held too long, it would end after breaker_hold (60 s) as "held".
    result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED"
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert ledger["outcome"] == "replaced", "admitted once the stale holder was swept"
    assert stopped not in _breaker(pipeline, "p5-sweep")
