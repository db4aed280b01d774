"""The node lock: one remediation per node, then find the Node and split monitor from act.

A second decision for a node in flight ends as ``"Duplicate"``; if the remediation in flight
rebooted the node for the same fault, the duplicate flags the recurrence on the lock
(``ledger.RECURRENCE``), and that remediation escalates once the node is back. A stronger
decision upgrades the remediation in flight instead (``upgrade``).
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    NOW,
    Value,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    entered_at,
    expression_values,
    lock_key,
    text_at,
)
from stacks.remediation.phases.mark import mark_node
from stacks.remediation.phases.upgrade import upgrade


def lock(
    flow: Flow, *, report: sfn.IChainable, failure: sfn.IChainable, act: sfn.IChainable
) -> sfn.IChainable:
    """Take the lock, then locate the Node: a monitor-only plan marks it and reports, an
    acting one goes on to ``act``."""
    s = flow.scope
    take = tasks.DynamoPutItem(
        s,
        "Take node lock",
        table=flow.ledger,
        item={
            **lock_key(),
            **ledger.lock_item(
                decision_id=dynamo_text(state.decision("decision_id")),
                fault_id=dynamo_text(state.FAULT_ID),
                action=dynamo_text(state.ACTION),
                since=Value.from_string(NOW),
                expires_at=dynamo_number(state.LOCK_EXPIRES_EPOCH),
            ),
        },
        condition_expression=ledger.LOCK_FREE.text,
        expression_attribute_values=expression_values(
            {":now": dynamo_number(state.NOW_EPOCH)}, ledger.LOCK_FREE
        ),
        result_selector=entered_at(),
        result_path=state.LOCK,
    )
    take.add_catch(
        _duplicate(flow, take, failure),
        errors=[CONDITIONAL_CHECK_FAILED],
        result_path=sfn.JsonPath.DISCARD,
    )
    flow.guard(take)
    locate = flow.kube(
        "Locate node", "locate", {"instance_id": text_at(state.INSTANCE_ID)}, result_path=state.NODE
    )
    missing = flow.found_error(
        "Node not found",
        "NodeNotFound",
        "no Kubernetes node has providerID aws:///*/{}",
        state.INSTANCE_ID,
    )
    monitor = flow.step("Start monitoring", "monitoring")
    monitor.next(mark_node(flow, "Mark (monitor only)", cordon=False)).next(
        flow.put("Monitored", state.OUTCOME, name=sfn.JsonPath.string_at(state.PLANNED_OUTCOME))
    ).next(report)
    take.next(locate).next(
        sfn.Choice(s, "Node found?")
        .when(sfn.Condition.is_null(state.NODE_NAME), missing.next(failure))
        .when(sfn.Condition.string_equals(state.MODE, "monitor"), monitor)
        .otherwise(act)
    )
    return take


def _duplicate(flow: Flow, take: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """The node already has a remediation in flight: this decision joins nothing. If that
    one rebooted the node for the same fault, the fault came back: tell it to escalate. If
    not, a stronger decision upgrades it (or, too late for that, tries to ``take`` again)."""
    s = flow.scope
    me = dynamo_text(state.decision("decision_id"))
    flag = flow.write(
        "Flag recurrence",
        lock_key(),
        ledger.FLAG_RECURRENCE,
        {":now": dynamo_now(), ":me": me, ":fault": dynamo_text(state.FAULT_ID)},
        condition=ledger.RECURRENCE,
    )
    duplicate = flow.guard(
        flow.record(
            "Record duplicate",
            record_state="duplicate",
            values={"outcome": Value.from_string("duplicate"), "ended_at": dynamo_now()},
        )
    )
    done = sfn.Succeed(s, "Duplicate", comment="another remediation of this node is in flight")
    flag.add_catch(
        upgrade(flow, retake=take, duplicate=duplicate, failure=failure),
        errors=[CONDITIONAL_CHECK_FAILED],
        result_path=sfn.JsonPath.DISCARD,
    )
    # Best effort: whatever else stops the flag, this decision is still a duplicate.
    flag.add_catch(duplicate, errors=[sfn.Errors.ALL], result_path=sfn.JsonPath.DISCARD)
    flag.next(duplicate).next(done)
    return flag
