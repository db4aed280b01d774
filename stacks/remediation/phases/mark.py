"""Marking the Node: condition and health label always, taint and cordon when acting; then
``FaultToActionSeconds``, how long the faulty node kept taking work."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.metrics import FAULT_TO_ACTION_METRIC
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import Value, dynamo_text, text_at
from stacks.remediation.kit.signals import one_metric


def marking(health_status: str | None = None) -> dict[str, str]:
    """What a kube ``mark`` (or ``hold``) puts on the Node: the decision's condition and
    evidence, and the plan's health label unless ``health_status`` says otherwise."""
    return {
        "node": text_at(state.NODE_NAME),
        "fault_id": text_at(state.FAULT_ID),
        "condition": text_at(state.decision("condition")),
        "condition_status": text_at(state.decision("condition_status")),
        "reason": text_at(state.decision("metric")),
        "message": text_at(state.decision("evidence_line")),
        "health_status": health_status or text_at(state.HEALTH_STATUS),
    }


def mark_node(
    flow: Flow, id: str, *, cordon: bool, health_status: str | None = None, when: str = "marked"
) -> tasks.LambdaInvoke:
    """The kube ``mark`` op; ``$.times.<when>`` says when it ran."""
    return flow.kube(
        id,
        "mark",
        {**marking(health_status), "cordon": cordon, "taint": cordon},
        result_path=state.time_of(when),
        timed=True,
    )


def give_way(
    flow: Flow, record: str, mark_as: str, *, health_status: str, when: str, then: sfn.IChainable
) -> sfn.IChainable:
    """Record why an action gave way to a stronger one (``state.ESCALATION_REASON``), label
    the Node for it and go on to it: a reset that became a reboot, a reboot a replacement."""
    recorded = flow.guard(
        flow.record(
            record,
            values={
                "escalated": Value.from_boolean(True),
                "escalation": dynamo_text(state.ESCALATION_REASON),
            },
        )
    )
    recorded.next(
        mark_node(flow, mark_as, cordon=True, health_status=health_status, when=when)
    ).next(then)
    return recorded


def fault_to_action(flow: Flow, suffix: str, at: str) -> sfn.Chain:
    """``FaultToActionSeconds``: from the fault line's time to the node's first cordon at
    ``at`` (``{at}``), how long the faulty node kept taking work."""
    elapsed = flow.elapsed(
        f"Fault to action{suffix}",
        text_at(state.decision("first_seen")),
        text_at(f"{at}.at"),
        state.FAULT_TO_ACTION,
    )
    return sfn.Chain.start(elapsed).next(
        one_metric(
            flow,
            f"Publish fault-to-action time{suffix}",
            FAULT_TO_ACTION_METRIC,
            state.FAULT_TO_ACTION_SECONDS,
            "Seconds",
        )
    )


def mark(flow: Flow, then: sfn.IChainable) -> sfn.IChainable:
    """Enter ``marking``, cordon and taint the Node, publish the fault-to-action time unless
    the quarantine cordoned it first (and published it then)."""
    start = flow.step("Start marking", "marking")
    first = (
        sfn.Choice(flow.scope, "Quarantined before?")
        .when(sfn.Condition.is_present(state.QUARANTINED_AT), then)
        .otherwise(fault_to_action(flow, "", state.time_of("marked")).next(then))
    )
    start.next(mark_node(flow, "Mark", cordon=True)).next(first)
    return start
