"""The failure phase, where every unexpected error and every failure a Choice finds ends
(and a cleanup after an execution that was stopped, ``cleanup``): the ledger says where it
stopped, the Node says so too (labels and a condition, ``FAULT_REASON_LABEL``...), SNS and
the ``Remediations`` metric say so, and the execution fails as ``"Remediation failed"``.

A remediation that was admitted may have taken its node out of service: it *parks* its lock
and keeps its breaker slot (``nodemedic.remediate.parking``), so the node stays counted by
the breaker and no new remediation starts on it until a person takes nodemedic's taint off.
A denial, or a request left unanswered that holds, is a person's decision: the node is
parked ``held_out``, on its group's breaker only (``parking.HELD_OUT``).
One that was not gives its lock back, as the report would.

Every step here is best effort: one that fails leaves its error beside the state and the
next one still runs.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.remediate import ledger, parking
from nodemedic.remediate.expressions import Update
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import (
    NOW,
    dynamo_json,
    dynamo_now,
    dynamo_text,
    formatted,
    text_at,
)
from stacks.remediation.kit.signals import metrics, notify, remediations
from stacks.remediation.kit.transact import (
    Item,
    Wire,
    both_breakers,
    held_out_breakers,
    lock_of,
    number,
    text,
    transaction,
)
from stacks.remediation.phases.release import release


def failure(
    flow: Flow, *, end: sfn.IChainable | None = None, substrate: bool = False
) -> sfn.IChainable:
    """The phase's first state; it ends in ``end``, ``"Remediation failed"`` by default.
    ``substrate``: the record and the mail name the node's substrate, as the report's do,
    so that ``history`` says ``failed (karpenter)``; only where the plan carries one (the
    remediation's own flow in a cluster that lists another substrate, not the cleanup)."""
    named = {"substrate": state.SUBSTRATE} if substrate else {}
    record = flow.record(
        "Record failure",
        record_state="failed",
        values={
            "failed_step": dynamo_text(state.STEP_NAME),
            "error": dynamo_json(state.ERROR),
            "ended_at": dynamo_now(),
            **{name: dynamo_text(path) for name, path in named.items()},
        },
    )
    mailed = notify(
        flow,
        "Notify failure",
        formatted("nodemedic failed: {}", state.INSTANCE_ID),
        {
            "outcome": "failed",
            "summary": formatted(
                "remediation of {} ({}) stopped at {}: {}",
                state.INSTANCE_ID,
                state.FAULT_ID,
                state.STEP_NAME,
                state.ERROR_NAME,
            ),
            "stopped_at": sfn.JsonPath.string_at(state.STEP_NAME),
            "error": sfn.JsonPath.object_at(state.ERROR),
            **{name: sfn.JsonPath.string_at(path) for name, path in named.items()},
        },
        guard=False,
    )
    metric = metrics(
        flow, "Publish failure metric", METRICS_NAMESPACE, [remediations("failed")], guard=False
    )
    fail = end or sfn.Fail(
        flow.scope,
        "Remediation failed",
        error="RemediationFailed",
        cause="a remediation step failed; the ledger item and the SNS message say which",
    )
    taken_out = (
        sfn.Choice(flow.scope, "Node taken out?")
        .when(sfn.Condition.is_present(state.SLOT), _park(flow, then=mailed))
        .otherwise(release(flow, "Failed: ", mailed, best_effort=True))
    )
    marked = _mark_failed(flow, then=taken_out)
    record.add_catch(marked, result_path=state.RECORD_ERROR)
    mailed.add_catch(metric, result_path=state.NOTIFY_ERROR)
    metric.add_catch(fail, result_path=state.METRIC_ERROR)
    record.next(marked)
    mailed.next(metric).next(fail)
    return record


def _mark_failed(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """The kube ``fail`` op on the Node, once one was found."""
    mark = flow.kube(
        "Mark failure",
        "fail",
        {
            "node": text_at(state.NODE_NAME),
            "fault_id": text_at(state.FAULT_ID),
            "step": text_at(state.STEP_NAME),
            "error": text_at(state.ERROR_NAME),
            "message": formatted(
                "nodemedic: remediation {} of {} stopped at {}: {}",
                state.decision("decision_id"),
                state.FAULT_ID,
                state.STEP_NAME,
                state.ERROR_NAME,
            ),
        },
        result_path=state.time_of("failed"),
        timed=True,
        guard=False,
    )
    mark.add_catch(then, result_path=state.MARK_ERROR)
    mark.next(then)
    # "" until "Locate node" ran, null when it found no Node.
    found = sfn.Condition.and_(
        sfn.Condition.is_string(state.NODE_NAME),
        sfn.Condition.not_(sfn.Condition.string_equals(state.NODE_NAME, "")),
    )
    return sfn.Choice(flow.scope, "Node found before?").when(found, mark).otherwise(then)


def _park(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Park this remediation's lock and count its node on the breakers, in one transaction
    (``parking.PARK`` under ``ledger.LOCK_HELD_BY``, ``parking.COUNT``); a person's decision
    (``parking.HELD_OUT_ERRORS``) parks it ``parking.HELD_OUT``, counted on its group's
    breaker and taken off the cluster's."""
    cluster = flow.settings.name
    values = {
        ":me": text(text_at(state.decision("decision_id"))),
        ":now": text(NOW),
        ":step": text(text_at(state.STEP_NAME)),
        ":group": text(text_at(state.GROUP_NAME)),
        ":until": number(state.LEASE_UNTIL),
    }

    def park(id: str, change: Update, breakers: list[Item], **also: Wire) -> sfn.IChainable:
        task = transaction(
            flow,
            id,
            [
                Item(
                    lock_of(state.INSTANCE_ID),
                    values | also,
                    condition=ledger.LOCK_HELD_BY,
                    change=change,
                ),
                *breakers,
            ],
            guard=False,
        )
        task.add_catch(then, result_path=state.PARK_ERROR)
        return task.next(then)

    decided = sfn.Condition.or_(
        *[sfn.Condition.string_equals(state.ERROR_NAME, e) for e in parking.HELD_OUT_ERRORS]
    )
    clock = flow.clock("Failed: clock", guard=False)
    clock.add_catch(then, result_path=state.PARK_ERROR)
    clock.next(
        sfn.Choice(flow.scope, "A person's decision?")
        .when(
            decided,
            park(
                "Park node held out",
                parking.PARK_HELD_OUT,
                held_out_breakers(state.GROUP_NAME, state.INSTANCE_ID, cluster),
                **{":why": text(text_at(state.ERROR_NAME))},
            ),
        )
        .otherwise(
            park(
                "Park node",
                parking.PARK,
                both_breakers(state.GROUP_NAME, state.INSTANCE_ID, cluster, parking.COUNT),
            )
        )
    )
    return clock
