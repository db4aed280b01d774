"""Quarantine: a proven fault's node cordoned at once, before the breaker
(``nodemedic.remediate.quarantine``).

``"Take quarantine"`` is one transaction: the node joins this window's quarantined nodes of
its group and of the cluster, each under its limit. Taken, the node is marked as the mark
phase marks it (condition, health label, taint, cordon under nodemedic's own annotation) and
``FaultToActionSeconds`` is published from then. Refused, the node is left untouched for the
breaker; the window's first refusal trips: one page and one ``QuarantineTripped`` datum,
whose alarm mails the topic too. Either way the decision goes on to the breaker.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.metrics import (
    METRICS_NAMESPACE,
    QUARANTINE_TRIPPED_METRIC,
    QUARANTINED_METRIC,
)
from nodemedic.remediate import breaker, ledger, quarantine
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    NOW,
    Value,
    dynamo_now,
    dynamo_text,
    formatted,
    text_at,
)
from stacks.remediation.kit.signals import cluster_metric, metrics, notify
from stacks.remediation.kit.transact import (
    TRANSACTION_CANCELED,
    Item,
    instance_set,
    number,
    text,
    transaction,
)
from stacks.remediation.phases.mark import fault_to_action, mark_node

_WINDOW = f"{state.QUARANTINE}.window"


def quarantine_phase(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Quarantine an acting decision of a line its node's agent shipped, then ``then``."""
    s = flow.scope
    rules = flow.settings.quarantine_rules
    if not (rules.group_percent and rules.cluster_percent):
        return then
    start = flow.step("Start quarantine", "quarantining")
    limits = flow.arithmetic(
        "Quarantine limits",
        "quarantine",
        {
            "at": NOW,
            "group": sfn.JsonPath.object_at(state.GROUP),
            "cluster_nodes": sfn.JsonPath.number_at(state.CLUSTER_NODES),
            "instance_id": text_at(state.INSTANCE_ID),
            "rules": rules.to_mapping(),
        },
        state.QUARANTINE,
    )
    take = _take(flow)
    take.add_catch(
        _trip(flow, then=then), errors=[TRANSACTION_CANCELED], result_path=sfn.JsonPath.DISCARD
    )
    flow.guard(take)
    cordon = mark_node(flow, "Quarantine node", cordon=True, when="quarantined")
    counted = metrics(
        flow,
        "Publish quarantined",
        METRICS_NAMESPACE,
        [{"name": QUARANTINED_METRIC, "value": 1, "unit": "Count"}],
    )
    start.next(limits).next(take).next(cordon).next(
        fault_to_action(flow, " (quarantine)", state.QUARANTINED_AT)
    ).next(counted).next(then)
    return (
        sfn.Choice(s, "Quarantine?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.or_(
                    *(
                        sfn.Condition.string_equals(state.decision("source"), source)
                        for source in quarantine.QUARANTINED_SOURCES
                    )
                ),
                sfn.Condition.or_(
                    *(
                        sfn.Condition.string_equals(state.ACTION, action)
                        for action in quarantine.QUARANTINED_ACTIONS
                    )
                ),
            ),
            start,
        )
        .otherwise(then)
    )


def _keys(cluster: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """This window's item of the node's group, and of the cluster: (partition, sort) keys."""
    sk = formatted(quarantine.QUARANTINE_SK, _WINDOW)
    return (formatted(ledger.BREAKER_PK, state.GROUP_NAME), sk), (
        breaker.CLUSTER_PK.format(cluster),
        sk,
    )


def _take(flow: Flow) -> sfn.TaskStateBase:
    keys = _keys(flow.settings.name)
    values = {
        ":me": instance_set(state.INSTANCE_ID),
        ":instance": text(text_at(state.INSTANCE_ID)),
        ":at": text(NOW),
    }
    return transaction(
        flow,
        "Take quarantine",
        [
            Item(
                ledger.key(text(pk), text(sk)),
                {**values, ":limit": number(f"{state.QUARANTINE}.{limit}")},
                condition=quarantine.ROOM,
                change=quarantine.JOIN,
            )
            for (pk, sk), limit in zip(keys, ("group", "cluster"), strict=True)
        ],
        guard=False,
    )


def _trip(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """The window's first refusal pages and counts; any later one goes on quietly."""
    cluster = flow.settings.name
    _, (pk, sk) = _keys(cluster)
    trip = flow.write(
        "Trip quarantine",
        ledger.key(Value.from_string(pk), Value.from_string(sk)),
        quarantine.TRIP,
        {":at": dynamo_now(), ":reason": dynamo_text(state.QUARANTINE_REASON)},
        condition=quarantine.NOT_TRIPPED,
    )
    trip.add_catch(then, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    flow.guard(trip)
    page = notify(
        flow,
        "Page quarantine tripped",
        f"nodemedic quarantine limit reached: cluster {cluster}",
        {
            "outcome": quarantine.TRIPPED_OUTCOME,
            "action": sfn.JsonPath.string_at(state.ACTION),
            "reason": sfn.JsonPath.string_at(state.QUARANTINE_REASON),
            "summary": sfn.JsonPath.string_at(state.QUARANTINE_REASON),
        },
    )
    trip.next(page).next(
        cluster_metric(
            flow,
            "Publish quarantine tripped",
            QUARANTINE_TRIPPED_METRIC,
            1,
            cluster=sfn.JsonPath.string_at(state.CLUSTER),
        )
    ).next(then)
    return trip


def lifted(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """A quarantined node held past ``breaker_hold`` goes back to work as an unquarantined
    one would have stayed: its condition kept, nodemedic's taint and own cordon lifted, so
    no node stays cordoned without a remediation at work on it."""
    lift = flow.kube(
        "Lift quarantine",
        "lift",
        {"node": text_at(state.NODE_NAME)},
        result_path=state.time_of("lifted"),
        timed=True,
    )
    lift.next(then)
    return (
        sfn.Choice(flow.scope, "Quarantined?")
        .when(sfn.Condition.is_present(state.QUARANTINED_AT), lift)
        .otherwise(then)
    )
