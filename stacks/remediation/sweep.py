"""The sweep: drop the breaker's stale holders, so a stopped execution cannot keep its slot
(and the breaker shut) forever.

Each holder is removed by one transaction that checks ``ledger.STALE`` on the holder's node
lock and applies ``ledger.SWEEP`` to the breaker: a live holder makes it fail, and stays.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts import BREAKER_SK, LOCK_SK
from nodemedic.remediate import ledger, policy
from stacks.remediation import state
from stacks.remediation.flow import Flow
from stacks.remediation.render import breaker_key, expression_values, formatted, text_at

# The state of one iteration of the sweep:
HOLDER = "$.holder"
"""The holder's instance id."""
ITEM_GROUP = "$.group"
"""The node group's name."""
ITEM_NOW = "$.now"
"""The plan's time in epoch seconds, for ``ledger.STALE``."""


def sweep(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Read the breaker, try each holder, schedule the next sweep, go on to ``then``."""
    s = flow.scope
    read = flow.read("Read breaker", breaker_key(), state.BREAKER)
    remove = _remove_if_stale(flow)
    # A live holder makes the transaction fail: nothing to do for it.
    remove.add_catch(sfn.Pass(s, "Holder is live"), result_path=sfn.JsonPath.DISCARD)
    each = sfn.Map(
        s,
        "Sweep stale holders",
        items_path=state.BREAKER_HOLDERS,
        item_selector={
            "holder": sfn.JsonPath.string_at("$$.Map.Item.Value"),
            "group": text_at(state.GROUP_NAME),
            "now": sfn.JsonPath.number_at(state.NOW_EPOCH),
        },
        max_concurrency=1,
        result_path=sfn.JsonPath.DISCARD,
    ).item_processor(remove)
    flow.guard(each)
    rounds = policy.rounds(ledger.SWEEP_SECONDS, flow.settings.poll_seconds)
    scheduled = flow.put(
        "Next sweep",
        state.HOLD,
        held=True,
        rounds=sfn.JsonPath.number_at(state.HOLD_ROUNDS),
        sweep_at=sfn.JsonPath.math_add(sfn.JsonPath.number_at(state.HOLD_ROUNDS), rounds),
    )
    scheduled.next(then)
    read.next(
        sfn.Choice(s, "Any holders?")
        .when(sfn.Condition.is_present(state.BREAKER_HOLDERS), each.next(scheduled))
        .otherwise(scheduled)
    )
    return read


def _remove_if_stale(flow: Flow) -> tasks.CallAwsService:
    """One TransactWriteItems in the SDK's wire shapes: no typed task exists for it."""
    table = flow.ledger
    stale = ledger.STALE
    sweep_update = ledger.SWEEP
    return tasks.CallAwsService(
        flow.scope,
        "Remove stale holder",
        service="dynamodb",
        action="transactWriteItems",
        iam_action="dynamodb:ConditionCheckItem",
        iam_resources=[table.table_arn],
        additional_iam_statements=[
            iam.PolicyStatement(actions=["dynamodb:UpdateItem"], resources=[table.table_arn])
        ],
        parameters={
            "TransactItems": [
                {
                    "ConditionCheck": {
                        "TableName": table.table_name,
                        "Key": ledger.key(_text(text_at(HOLDER)), _text(LOCK_SK)),
                        "ConditionExpression": stale.text,
                        "ExpressionAttributeValues": expression_values(
                            {":now": {"N": formatted("{}", ITEM_NOW)}}, stale
                        ),
                    }
                },
                {
                    "Update": {
                        "TableName": table.table_name,
                        "Key": ledger.key(
                            _text(formatted(ledger.BREAKER_PK, ITEM_GROUP)), _text(BREAKER_SK)
                        ),
                        "UpdateExpression": sweep_update.text,
                        "ExpressionAttributeValues": expression_values(
                            {":holder": {"SS": sfn.JsonPath.array(text_at(HOLDER))}}, sweep_update
                        ),
                    }
                },
            ]
        },
        result_path=sfn.JsonPath.DISCARD,
    )


def _text(value: str) -> dict[str, str]:
    return {"S": value}
