"""The reconcile: every ``parking.RECONCILE_SECONDS`` (an EventBridge schedule), the Nodes
that carry nodemedic's taint, the ones it took out of service, checked against the ledger.

A node whose lock is live (held, unexpired, not parked) has a remediation at work on it;
one handed off (``nodemedic.remediate.handoff``) is a vendor's until it is taken back, and
one a person's decision holds out (``parking.HELD_OUT``: a denial, an unanswered request
that holds) is counted on its group's breaker again; both are ``NodesHeldOut``.
Any other is *stranded*: its remediation failed or was stopped (a parked lock), or it has
no lock at all (expired, or lost) and still carries the taint when read again. For a parked
one the reconcile renews the lease and counts it on its breaker again (``parking.RENEW``,
``parking.COUNT``), so it stays counted for as long as it stays out. The count of stranded
nodes is published as ``StrandedNodes`` (its alarm mails the cluster's topic), and the
execution's output names them. Then it hears silence (``hear_silence``,
``nodemedic.remediate.silence``): the Ready nodes whose agent shipped no heartbeat for
three intervals, as ``SilentNodes``. Last it tells of the nodes that waited for their deep
check past ``deep_check_timeout`` (``overdue``), and counts the Nodes of each node group by
health status for the dashboard (``Nodes``).
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.metrics import HELD_OUT_METRIC, SILENT_METRIC, STRANDED_METRIC
from nodemedic.remediate import handoff, ledger, parking
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import lock_key, text_at
from stacks.remediation.kit.signals import cluster_metric, tell_new
from stacks.remediation.kit.transact import (
    TRANSACTION_CANCELED,
    Item,
    both_breakers,
    held_out_breakers,
    lock_of,
    number,
    transaction,
)
from stacks.remediation.machines.overdue import tell_overdue

TAINTED: Final = "$.tainted"
"""The kube ``tainted`` op's answer: ``{nodes: [{node, instance_id, fault_id}]}``."""
CHECKED: Final = "$.checked"
"""One result per tainted node: ``{node}`` when it is stranded, ``{held_out}`` (the node)
when a person's decision holds it out, ``{}`` when a remediation is live on it."""
STRANDED: Final = "$.stranded"
"""``{count, nodes, held_out}``: the stranded nodes, and how many are held out."""
SILENT: Final = "$.silent"
"""The kube ``silent`` op's answer: ``{count, nodes, left_out, new: {count, message}}``."""

# The state of one iteration: the node, and what the ledger says of it.
NODE: Final = "$.node"
INSTANCE: Final = "$.instance_id"
NOW: Final = "$.now"
UNTIL: Final = "$.until"
LOCK: Final = "$.lock"
LOCK_GROUP: Final = f"{LOCK}.Item.node_group.S"
AGAIN: Final = "$.again"
"""The kube ``tainted`` op's answer for the one node, read again: ``{nodes}``."""
EXPIRY: Final = "$.expiry"
"""``{at}``: the lock's ``expires_at`` as a number (GetItem gives numbers as strings)."""


def reconcile(flow: Flow) -> sfn.IChainable:
    """The state machine's first state; its input (the schedule's event) is not read."""
    s = flow.scope
    listed = flow.kube("List tainted nodes", "tainted", {}, result_path=TAINTED, guard=False)
    each = sfn.Map(
        s,
        "Check each node",
        items_path=f"{TAINTED}.nodes",
        item_selector={
            "node": text_at("$$.Map.Item.Value.node"),
            "instance_id": text_at("$$.Map.Item.Value.instance_id"),
            "now": sfn.JsonPath.number_at(state.CLOCK_EPOCH),
            "until": sfn.JsonPath.number_at(state.LEASE_UNTIL),
        },
        max_concurrency=4,
        result_path=CHECKED,
    ).item_processor(_check(flow))
    count = flow.put(
        "Count stranded",
        STRANDED,
        count=sfn.JsonPath.array_length(sfn.JsonPath.list_at(f"{CHECKED}[*].node")),
        nodes=sfn.JsonPath.list_at(f"{CHECKED}[*].node"),
        held_out=sfn.JsonPath.array_length(sfn.JsonPath.list_at(f"{CHECKED}[*].held_out")),
    )
    published = _gauge(flow, "Publish stranded nodes", STRANDED_METRIC, f"{STRANDED}.count")
    held_out = _gauge(flow, "Publish held-out nodes", HELD_OUT_METRIC, f"{STRANDED}.held_out")
    done = sfn.Succeed(s, "Reconciled", output_path=STRANDED)
    counted = flow.kube(
        "Count nodes by status",
        "census",
        {"cluster": flow.settings.name},
        result_path=sfn.JsonPath.DISCARD,
        guard=False,
    )
    # A dashboard's figures: their failure must not fail the reconcile and its alarms.
    counted.add_catch(done, errors=[sfn.Errors.ALL], result_path=sfn.JsonPath.DISCARD)
    counted.next(done)
    start = flow.clock("Clock", guard=False)
    start.next(listed).next(each).next(count).next(published).next(held_out).next(
        hear_silence(flow, tell_overdue(flow, counted))
    )
    return start


def hear_silence(flow: Flow, done: sfn.IChainable) -> sfn.IChainable:
    """``SilentNodes``, and one notification naming the nodes newly silent (the kube
    Lambda's ``silent`` op marks them told, so the next runs do not repeat them)."""
    listed = flow.kube("List silent nodes", "silent", {}, result_path=SILENT, guard=False)
    published = _gauge(flow, "Publish silent nodes", SILENT_METRIC, f"{SILENT}.count")
    listed.next(published).next(tell_new(flow, "silent", "agents silent", SILENT, done))
    return listed


def _gauge(flow: Flow, id: str, metric: str, at: str) -> sfn.IChainable:
    """``metric`` of the whole cluster with the value at ``at``."""
    return cluster_metric(
        flow,
        id,
        metric,
        sfn.JsonPath.number_at(at),
        cluster=flow.settings.name,
        guard=False,
    )


def _renewal(flow: Flow, id: str, breakers: list[Item]) -> sfn.TaskStateBase:
    """A parked lock's lease renewed and its node counted on ``breakers``, in one
    transaction. A lock a new remediation took over meanwhile is no longer parked: the
    transaction is cancelled (the caller's catch). Any other error fails the run, which the
    StrandedNodes alarm counts: a renewal that did not happen must not pass for one."""
    return transaction(
        flow,
        id,
        [
            Item(
                lock_of(INSTANCE),
                {":until": number(UNTIL)},
                condition=parking.PARKED,
                change=parking.RENEW,
            ),
            *breakers,
        ],
        guard=False,
    )


def _check(flow: Flow) -> sfn.IChainable:
    """One node: live, or stranded (and, when parked, its lease renewed). A node with no
    live lock is read again first: a remediation that ended after the listing cleared the
    node before it released the lock, and the node is no longer ours to count."""
    s = flow.scope
    stranded = flow.put("Stranded", "$", node=text_at(NODE))
    again = flow.kube(
        "Still tainted?", "tainted", {"node": text_at(NODE)}, result_path=AGAIN, guard=False
    )
    again.next(
        sfn.Choice(s, "Still ours?")
        .when(sfn.Condition.is_present(f"{AGAIN}.nodes[0]"), stranded)
        .otherwise(sfn.Pass(s, "Cleared since", result=sfn.Result.from_object({})))
    )
    cluster = flow.settings.name
    counted = both_breakers(LOCK_GROUP, INSTANCE, cluster, parking.COUNT)
    renew = _renewal(flow, "Renew lease", counted)
    renew.add_catch(stranded, errors=[TRANSACTION_CANCELED], result_path=sfn.JsonPath.DISCARD)
    renew.next(stranded)
    # Held out by a person's decision: capacity lost, not stranded; on its group's breaker.
    held_out = flow.put("Held out", "$", held_out=text_at(NODE))
    renew_held_out = _renewal(
        flow, "Renew held-out lease", held_out_breakers(LOCK_GROUP, INSTANCE, cluster)
    )
    renew_held_out.add_catch(
        stranded, errors=[TRANSACTION_CANCELED], result_path=sfn.JsonPath.DISCARD
    )
    renew_held_out.next(held_out)
    live = (
        sfn.Choice(s, "Live?")
        .when(
            sfn.Condition.number_greater_than_equals_json_path(f"{EXPIRY}.at", NOW),
            sfn.Pass(s, "Live", result=sfn.Result.from_object({})),
        )
        .otherwise(again)
    )
    expiry = flow.put(
        "Expiry",
        EXPIRY,
        at=sfn.JsonPath.string_to_json(text_at(f"{LOCK}.Item.{ledger.EXPIRES_AT}.N")),
    )
    expiry.next(live)
    read = flow.read("Read lock", lock_key(INSTANCE), LOCK, guard=False)
    # Handed off (``handoff``): a vendor has it, cordoned and counted on its group; its lock
    # has no lease. Counted again as the hand-off counts it (one handed off by an older
    # release was on the cluster's breaker too).
    handed_off = transaction(
        flow,
        "Count handed off",
        held_out_breakers(LOCK_GROUP, INSTANCE, flow.settings.name),
        guard=False,
    )
    handed_off.next(held_out)
    read.next(
        sfn.Choice(s, "Parked?")
        .when(sfn.Condition.is_present(f"{LOCK}.Item.{handoff.HANDED_OFF_AT}"), handed_off)
        .when(sfn.Condition.is_present(f"{LOCK}.Item.{parking.HELD_OUT}"), renew_held_out)
        .when(sfn.Condition.is_present(f"{LOCK}.Item.{parking.FAILED_AT}"), renew)
        .when(sfn.Condition.is_present(f"{LOCK}.Item.{ledger.EXPIRES_AT}"), expiry)
        .otherwise(again)
    )
    return read
