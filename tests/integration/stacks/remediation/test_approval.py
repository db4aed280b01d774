"""Approval and hand-off, on moto and the real apiserver: a replacement asked of a person
proceeds once approved, and the ledger and ``nodemedic history`` name who approved; a
denial, or a request left unanswered where that holds, leaves the node cordoned, drained
and counted; one left unanswered where that proceeds is replaced. A held node handed off to
a vendor is no remediation's while it is away (a new fault on it is a duplicate, the
reconcile neither renews nor strands it), and taken back it is held as before. A node group
may ask where its cluster does not: its replacements wait, another group's do not.

The world is ``tests.support.flow``'s; the CLI's answers run in-process against it.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from console.cli.approval import answer
from console.cli.handoff import NotHeld, hand_off, take_back, tell
from console.cli.history import records
from console.cli.remediations import entry
from nodemedic.contracts.kube import TAINT_KEY
from nodemedic.contracts.ledger import APPROVAL_TOKEN
from nodemedic.contracts.metrics import HELD_OUT_METRIC, METRICS_NAMESPACE
from nodemedic.remediate import approval, handoff
from nodemedic.settings import ClusterSettings, parse_cluster
from tests.support.flow import GPU, NEURON, World, asg_instance, our_taints
from tests.support.kube import wait_for
from tests.support.remediation import FAST, REGION, TICK, Pipeline, datapoints, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

ASKING = ClusterSettings(
    name="asking",
    node_groups=("trn1-approved", "trn1-denied", "trn1-unanswered", "trn1-handoff"),
    approval="replace",
    approval_timeout=30,
    **FAST,
)
"""Replacements wait for a person, 30 s at most, then the node is held (the default): the
test's answer, on a busy machine, may come seconds after the request (as ``SCARCE``'s)."""
PROCEEDING = ClusterSettings(
    name="proceeding",
    node_groups=("trn1-unanswered-go",),
    approval="any",
    approval_timeout=2,
    approval_timeout_default="proceed",
    **FAST,
)
GROUPED = parse_cluster(
    {
        "name": "grouped",
        "node_groups": ["trn1-asked", "trn1-unasked"],
        **FAST,
        "group_overrides": {"trn1-asked": {"approval": "replace", "approval_timeout": 120}},
    }
)
"""Asks no one, but for one group's replacements, which wait up to two minutes."""
SCARCE = ClusterSettings(
    name="scarce",
    node_groups=("trn1-scarce-a", "trn1-scarce-b", "p5-scarce"),
    approval="replace",
    approval_timeout=30,
    max_in_flight=1,
    breaker_cooldown=600,
    post_reboot_deep_check=False,
    **{**FAST, "breaker_hold": 5},
)
"""Asks before replacing; one remediation in flight across the cluster, a trip held long.
An unanswered request gives up after 30 s: a person's answer, on a busy machine, may come
seconds after the request."""
CALLER = "arn:aws:sts::123456789012:user/moto"
"""Who moto's STS says the caller is."""


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (ASKING, PROCEEDING, GROUPED, SCARCE)


def _awaiting(pipeline: Pipeline, record: dict[str, Any]) -> dict[str, Any]:
    """The decision's ledger record once its request waits for an answer."""

    def waiting() -> dict[str, Any] | None:
        found = pipeline.ledger(record)
        return found if found is not None and APPROVAL_TOKEN in found else None

    found = wait_for(waiting, what="the request for approval")
    assert found is not None
    return found


def _answer(pipeline: Pipeline, record: dict[str, Any], verb: str, reason: str) -> None:
    args = argparse.Namespace(
        command=verb, execution=record["decision_id"], reason=reason, endpoint_url=None
    )
    answer(args, boto3.Session(region_name=REGION), machine=pipeline.arn, table=pipeline.table)


def _held(world: World, pipeline: Pipeline, instance: str, group: str) -> None:
    """Cordoned with nodemedic's taint, not replaced, its lock parked and counted."""
    node = world.node(instance)
    assert node is not None and node.spec.unschedulable
    assert our_taints(node) == [f"{TAINT_KEY}=neuron-dma-error:NoSchedule"]
    assert asg_instance(instance)["HealthStatus"].upper() == "HEALTHY"
    assert "failed_at" in (pipeline.item(instance, "inflight") or {})
    assert instance in (pipeline.item(f"group#{group}", "breaker") or {})["holders"]


def test_an_approved_replacement_proceeds_and_names_who_approved(world: World) -> None:
    pipeline = world.pipelines["asking"]
    sick, _, _ = world.group("trn1-approved", 3, **NEURON)
    record = decision(sick, cluster="asking")
    execution = pipeline.start(record)

    waiting = _awaiting(pipeline, record)
    assert waiting["state"] == approval.AWAITING
    node = world.node(sick)
    assert node is not None and node.spec.unschedulable, "cordoned and drained first"
    (request,) = [m for m in pipeline.messages(sick) if m.get("outcome") == approval.AWAITING]
    assert request["subject"] == f"nodemedic approval needed: replace {sick}"
    assert request["evidence_line"] == record["evidence_line"]
    assert f"nodemedic approve|deny {record['decision_id']}" in request["summary"]
    _answer(pipeline, record, "approve", "the vendor confirmed the DMA fault")

    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    assert asg_instance(sick)["HealthStatus"].upper() == "UNHEALTHY"
    ledger = pipeline.ledger(record) or {}
    assert (ledger["state"], ledger["outcome"]) == ("closed", "replaced")
    assert (ledger["approved_by"], ledger["approval_reason"]) == (
        CALLER,
        "the vendor confirmed the DMA fault",
    )
    (shown,) = [entry(r) for r in records(pipeline.dynamodb, pipeline.table, sick)]
    assert shown["approved_by"] == CALLER
    steps = [s["step"] for s in shown["steps"]]
    assert steps.index("awaiting_approval") < steps.index("approved") < steps.index("replacing")


def test_a_denied_replacement_leaves_the_node_held_and_says_who_denied(world: World) -> None:
    pipeline = world.pipelines["asking"]
    sick, _, _ = world.group("trn1-denied", 3, **NEURON)
    record = decision(sick, cluster="asking")
    execution = pipeline.start(record)
    _awaiting(pipeline, record)

    _answer(pipeline, record, "deny", "a job's own checks pass on it")

    assert pipeline.finish(execution)["status"] == "FAILED"
    _held(world, pipeline, sick, "trn1-denied")
    ledger = pipeline.ledger(record) or {}
    assert (ledger["state"], ledger["failed_step"]) == ("failed", approval.AWAITING)
    # moto's SendTaskFailure drops the cause ("denied by <caller>: <reason>"): the record's
    # own fields say who and why.
    assert json.loads(ledger["error"])["Error"] == approval.DENIED_ERROR
    assert ledger["approval_reason"] == "a job's own checks pass on it"
    assert ledger["denied_by"] == CALLER
    assert "at_denied" in ledger


def test_an_unanswered_request_holds_the_node_where_that_is_the_default(world: World) -> None:
    pipeline = world.pipelines["asking"]
    sick, _, _ = world.group("trn1-unanswered", 3, **NEURON)
    record = decision(sick, cluster="asking")

    assert pipeline.run(record)["status"] == "FAILED"

    _held(world, pipeline, sick, "trn1-unanswered")
    ledger = pipeline.ledger(record) or {}
    assert (ledger["failed_step"], ledger["approval_default"]) == (approval.AWAITING, "hold")
    assert json.loads(ledger["error"])["Error"] == approval.TIMEOUT_ERROR
    assert "at_approval_timed_out" in ledger


def test_an_unanswered_request_proceeds_where_that_is_the_default(world: World) -> None:
    pipeline = world.pipelines["proceeding"]
    sick, _, _ = world.group("trn1-unanswered-go", 3, **NEURON)
    record = decision(sick, cluster="proceeding")

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    assert asg_instance(sick)["HealthStatus"].upper() == "UNHEALTHY"
    ledger = pipeline.ledger(record) or {}
    assert (ledger["outcome"], ledger["approval_default"]) == ("replaced", "proceed")
    assert "at_approval_timed_out" in ledger


def test_a_handed_off_node_is_no_remediations_until_it_is_taken_back(world: World) -> None:
    pipeline = world.pipelines["asking"]
    sick, _, _ = world.group("trn1-handoff", 3, **NEURON)
    dynamodb = pipeline.dynamodb
    with pytest.raises(NotHeld):
        hand_off(dynamodb, pipeline.table, "asking", sick, "", to="x", ticket="1", by=CALLER, now=1)
    denied = decision(sick, cluster="asking")
    execution = pipeline.start(denied)
    _awaiting(pipeline, denied)
    _answer(pipeline, denied, "deny", "send it to the vendor")
    assert pipeline.finish(execution)["status"] == "FAILED"

    opened = hand_off(
        dynamodb,
        pipeline.table,
        "asking",
        sick,
        world.nodes[sick],
        to="acme-hardware",
        ticket="RMA-1234",
        by=CALLER,
        now=1_790_000_000,
    )

    topic = pipeline.deployment.outputs["TopicArn"]
    tell(boto3.client("sns", region_name=REGION), topic, f"nodemedic handed off: {sick}", opened)
    (told,) = [m for m in pipeline.messages(sick) if m["subject"].endswith("handed off: " + sick)]
    assert (told["handed_off_to"], told["ticket"], told["requested_by"]) == (
        "acme-hardware",
        "RMA-1234",
        CALLER,
    )
    lock = pipeline.item(sick, "inflight") or {}
    assert (lock[handoff.HANDED_OFF_TO], lock[handoff.TICKET]) == ("acme-hardware", "RMA-1234")
    assert "expires_at" not in lock, "no lease: it frees itself never"
    # A new fault on it meanwhile: a duplicate, nothing is done to the node.
    again = decision(sick, cluster="asking", first_seen=datetime.now(UTC) - timedelta(hours=1))
    assert pipeline.run(again)["status"] == "SUCCEEDED"
    assert (pipeline.ledger(again) or {})["state"] == "duplicate"
    _held(world, pipeline, sick, "trn1-handoff")
    # The reconcile neither strands nor renews it: it is the vendor's.
    reconciled = pipeline.run_as_rule(pipeline.reconcile, TICK)
    assert reconciled["status"] == "SUCCEEDED", reconciled
    assert world.nodes[sick] not in json.loads(reconciled["output"])["nodes"]
    assert "expires_at" not in (pipeline.item(sick, "inflight") or {})
    shown = {r["decision_id"]: entry(r) for r in records(dynamodb, pipeline.table, sick)}
    assert shown[opened["decision_id"]]["triggered_by"] == CALLER
    assert shown[opened["decision_id"]]["state"] == handoff.HANDED_OFF_STATE

    back = take_back(dynamodb, pipeline.table, sick, by=CALLER, now=1_790_000_600)

    assert (back["handed_off_to"], back["ticket"]) == ("acme-hardware", "RMA-1234")
    lock = pipeline.item(sick, "inflight") or {}
    assert handoff.HANDED_OFF_AT not in lock and "failed_at" in lock
    assert int(lock["expires_at"]) == 1_790_000_600 + 900, "parked again, with a lease"
    closed = entry(pipeline.ledger(opened) or {})
    assert (closed["state"], closed["taken_back_by"]) == (handoff.TAKEN_BACK_STATE, CALLER)
    with pytest.raises(NotHeld):
        take_back(dynamodb, pipeline.table, sick, by=CALLER, now=1_790_000_700)


def test_a_group_s_own_approval_holds_its_replacement_and_no_other_group_s(world: World) -> None:
    pipeline = world.pipelines["grouped"]
    asked, _, _ = world.group("trn1-asked", 3, **NEURON)
    other, _, _ = world.group("trn1-unasked", 3, **NEURON)
    record = decision(asked, cluster="grouped")
    execution = pipeline.start(record)
    _awaiting(pipeline, record)
    (request,) = [m for m in pipeline.messages(asked) if m.get("outcome") == approval.AWAITING]
    assert (request["timeout_seconds"], request["on_timeout"]) == (120, "hold")

    # Meanwhile a replacement in a group that asks no one proceeds at once.
    assert pipeline.run(decision(other, cluster="grouped"))["status"] == "SUCCEEDED"
    assert asg_instance(other)["HealthStatus"].upper() == "UNHEALTHY"
    assert not [m for m in pipeline.messages(other) if m.get("outcome") == approval.AWAITING]
    assert asg_instance(asked)["HealthStatus"].upper() == "HEALTHY", "still waiting"

    _answer(pipeline, record, "approve", "the group's owner agrees")

    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    assert asg_instance(asked)["HealthStatus"].upper() == "UNHEALTHY"
    assert (pipeline.ledger(record) or {})["approved_by"] == CALLER


def test_nodes_people_hold_out_leave_the_cluster_cap_to_the_next_fault(world: World) -> None:
    pipeline = world.pipelines["scarce"]
    denied, _, _ = world.group("trn1-scarce-a", 3, **NEURON)
    unanswered, _, _ = world.group("trn1-scarce-b", 3, **NEURON)
    sick, _ = world.group("p5-scarce", 2, **GPU)
    record = decision(denied, cluster="scarce")
    execution = pipeline.start(record)
    _awaiting(pipeline, record)
    _answer(pipeline, record, "deny", "the vendor takes it")
    assert pipeline.finish(execution)["status"] == "FAILED"
    node = world.nodes[denied]
    hand_off(pipeline.dynamodb, pipeline.table, "scarce", denied, node, to="acme", ticket="9",
             by=CALLER, now=int(time.time()))  # fmt: skip
    assert pipeline.run(decision(unanswered, cluster="scarce"))["status"] == "FAILED"

    genuine = decision(sick, "nvidia-xid-48", cluster="scarce")
    assert pipeline.run(genuine)["status"] == "SUCCEEDED"

    assert (pipeline.ledger(genuine) or {})["outcome"] == "rebooted", "admitted at once"
    assert not any(m["outcome"] in ("held", "tripped") for m in pipeline.messages(sick))
    _held(world, pipeline, unanswered, "trn1-scarce-b")
    cluster = pipeline.item("cluster#scarce", "breaker") or {}
    assert not {denied, unanswered} & set(cluster.get("holders", ())), "not remediations"
    reconciled = pipeline.run_as_rule(pipeline.reconcile, TICK)
    assert reconciled["status"] == "SUCCEEDED", reconciled
    shown = json.loads(reconciled["output"])
    assert shown["held_out"] == 2
    assert not {world.nodes[denied], world.nodes[unanswered]} & set(shown["nodes"]), (
        "capacity lost, not stranded"
    )
    assert datapoints(METRICS_NAMESPACE, HELD_OUT_METRIC, Cluster="scarce")[-1] == 2
    assert unanswered in (pipeline.item("group#trn1-scarce-b", "breaker") or {})["holders"]
    assert not {denied, unanswered} & set(
        (pipeline.item("cluster#scarce", "breaker") or {}).get("holders", ())
    ), "nor counted there again by the reconcile"
