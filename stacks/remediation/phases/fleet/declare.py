"""Declaring a fleet event: one conditional write, whose winner mails the one notification
(``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate import fleet
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    Value,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    formatted,
)
from stacks.remediation.kit.signals import notify
from stacks.remediation.phases.fleet.window import judged, key


def declaring(flow: Flow, *, hold: sfn.IChainable) -> sfn.IChainable:
    """Declare the fleet event judged (``state.JUDGED``) by one conditional write, then
    ``hold``. The write's winner mails the one notification once the window has settled,
    judged again so that it lists every node of the storm (its own node is not cordoned:
    the wait costs nothing)."""
    declare = flow.write(
        "Declare fleet event",
        key(),
        fleet.DECLARE,
        {
            ":fleet": Value.from_string(fleet.FLEET),
            ":open": Value.from_string(fleet.OPEN),
            ":now": dynamo_now(),
            ":me": dynamo_text(state.decision("decision_id")),
            ":first": dynamo_number(state.JUDGED_FIRST_AT),
        },
        condition=fleet.DECLARABLE,
    )
    # Declared already (by another node's remediation, which mailed it): hold, quietly.
    declare.add_catch(hold, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    mailed = notify(
        flow,
        "Notify fleet event",
        formatted(
            "nodemedic fleet event: {} on {} nodes of {}",
            state.FAULT_ID,
            state.JUDGED_COUNT,
            state.GROUP_NAME,
        ),
        {
            "outcome": fleet.OUTCOME,
            "action": sfn.JsonPath.string_at(state.ACTION),
            "nodes": sfn.JsonPath.list_at(state.JUDGED_NODES),
            "count": sfn.JsonPath.number_at(state.JUDGED_COUNT),
            "summary": sfn.JsonPath.string_at(state.JUDGED_SUMMARY),
        },
    )
    settled = sfn.Wait(
        flow.scope, "Fleet settle to mail", time=sfn.WaitTime.seconds_path(state.JUDGED_SETTLES_IN)
    )
    judged_again = judged(flow, " to mail", settle=None, declare=mailed, then=mailed)
    flow.guard(declare).next(settled).next(judged_again)
    mailed.next(hold)
    return declare
