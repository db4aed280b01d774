"""Approval: where the plan says so (the ``approval`` of the node's group, else the
cluster's, asks for its action), the drained node waits for a person's answer before it is
rebooted or replaced (``nodemedic.remediate.approval``).

The request is mailed, then the flow keeps its task token on the decision's record with a
``.waitForTaskToken`` UpdateItem (an AWS SDK integration: DynamoDB's optimized one has no
callback pattern) and waits up to the group's ``approval_timeout``. ``nodemedic approve`` writes who
answers and why on the record, then answers with SendTaskSuccess, ``deny`` with
SendTaskFailure (error ``ApprovalDenied``, the cause naming who and why).
A denial and a hold on timeout go to the failure phase, which keeps the node cordoned and
counted. Where neither the cluster nor any group asks (``approval: none``) the phase has no
state at all."""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.ledger import APPROVAL_TOKEN
from nodemedic.remediate import approval as rules
from nodemedic.settings import groups as group_settings
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import dynamo_text, formatted, record_key
from stacks.remediation.kit.signals import notify

ANSWER: Final = "$.approval"
"""``{by, reason}``: an approval's answer, SendTaskSuccess's output (``rules.answer``)."""


def approval(flow: Flow, *, then: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """Ask where the plan says so, then ``then`` (the repair) or ``failure``."""
    if not group_settings.asks_approval(flow.settings):
        return then
    s = flow.scope
    start = flow.step("Start awaiting approval", rules.AWAITING)
    wait = _await(flow)
    start.next(_request(flow)).next(wait)

    # Who answered and why, ``nodemedic approve|deny`` wrote on the record itself.
    approved = flow.guard(flow.record("Record approval", record_state=rules.APPROVED))
    wait.next(approved).next(then)
    denied = flow.guard(flow.record("Record denial", record_state=rules.DENIED))
    wait.add_catch(denied, errors=[rules.DENIED_ERROR], result_path=state.ERROR)
    denied.next(failure)

    timed_out = flow.guard(
        flow.record(
            "Record approval timeout",
            record_state=rules.TIMED_OUT,
            values={"approval_default": dynamo_text(state.APPROVAL_TIMEOUT_DEFAULT)},
        )
    )
    wait.add_catch(timed_out, errors=[sfn.Errors.TIMEOUT], result_path=sfn.JsonPath.DISCARD)
    held = flow.found_error(
        "Held unanswered",
        rules.TIMEOUT_ERROR,
        "no answer within approval_timeout ({} s): held",
        state.APPROVAL_TIMEOUT,
    )
    held.next(failure)
    timed_out.next(
        sfn.Choice(s, "Proceed unanswered?")
        .when(sfn.Condition.string_equals(state.APPROVAL_TIMEOUT_DEFAULT, "proceed"), then)
        .otherwise(held)
    )
    asked = sfn.Condition.boolean_equals(state.APPROVAL, True)
    return sfn.Choice(s, "Approval asked?").when(asked, start).otherwise(then)


def _request(flow: Flow) -> sfn.IChainable:
    """The mail a person answers: the fault, its evidence, the last reboot for it, the
    planned action, and the command that answers."""
    return notify(
        flow,
        "Request approval",
        formatted("nodemedic approval needed: {} {}", state.ACTION, state.INSTANCE_ID),
        {
            "outcome": rules.AWAITING,
            "action": sfn.JsonPath.string_at(state.ACTION),
            "reason": sfn.JsonPath.string_at(state.REASON),
            "last_reboot": sfn.JsonPath.object_at(state.LAST_REBOOT),
            "escalation": sfn.JsonPath.object_at(state.ESCALATION),
            "timeout_seconds": sfn.JsonPath.number_at(state.APPROVAL_TIMEOUT),
            "on_timeout": sfn.JsonPath.string_at(state.APPROVAL_TIMEOUT_DEFAULT),
            "summary": formatted(
                "{} {} ({}, group {}) for {}? nodemedic approve|deny {} --reason TEXT --cluster {}",
                state.ACTION,
                state.INSTANCE_ID,
                state.NODE_NAME,
                state.GROUP_NAME,
                state.FAULT_ID,
                sfn.JsonPath.execution_name,
                flow.settings.name,
            ),
        },
    )


def _await(flow: Flow) -> tasks.CallAwsService:
    """The token on the record, and the wait for its answer (``{by, reason}``)."""
    key = record_key()
    task = tasks.CallAwsService(
        flow.scope,
        "Await approval",
        service="dynamodb",
        action="updateItem",
        integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        iam_resources=[flow.ledger.table_arn],
        parameters={
            "TableName": flow.ledger.table_name,
            "Key": {name: value.to_object() for name, value in key.items()},
            "UpdateExpression": "SET #token = :token",
            "ExpressionAttributeNames": {"#token": APPROVAL_TOKEN},
            "ExpressionAttributeValues": {":token": {"S": sfn.JsonPath.task_token}},
        },
        task_timeout=sfn.Timeout.at(state.APPROVAL_TIMEOUT),
        result_path=ANSWER,
    )
    return flow.guard(task)
