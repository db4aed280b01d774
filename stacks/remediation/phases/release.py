"""Giving back what this execution holds: its breaker slots, the group's and the cluster's
(then the ``InRemediation`` gauge, as the release left it) and its node lock. As the phase
after the report it fails on an error; the failure phase releases them best effort."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import (
    breaker_key,
    cluster_breaker_key,
    dynamo_instance_set,
    dynamo_now,
    dynamo_text,
    expression_values,
    lock_key,
)
from stacks.remediation.kit.signals import in_remediation


def release(flow: Flow, prefix: str, then: sfn.IChainable, *, best_effort: bool) -> sfn.IChainable:
    """The slot if ``$.slot`` says this execution holds one, the lock if ``$.lock`` does,
    then ``then``. State names start with ``prefix``: the report and the failure phase each
    have their own."""
    s = flow.scope
    slot = flow.write(
        f"{prefix}release slot",
        breaker_key(),
        ledger.RELEASE,
        {":me": dynamo_instance_set(), ":now": dynamo_now()},
        return_values=tasks.DynamoReturnValues.ALL_NEW,
        result_path=state.RELEASED,
    )
    cluster_slot = flow.write(
        f"{prefix}release cluster slot",
        cluster_breaker_key(flow.settings.name),
        ledger.RELEASE,
        {":me": dynamo_instance_set(), ":now": dynamo_now()},
    )
    gauge = in_remediation(
        flow, f"{prefix}publish nodes in remediation", state.RELEASED_COUNT, guard=not best_effort
    )
    # The last holder's release leaves no holders attribute (ledger.RELEASE): count it 0.
    left = (
        sfn.Choice(s, f"{prefix}holders left?")
        .when(
            sfn.Condition.is_present(state.RELEASED_HOLDERS),
            flow.put(
                f"{prefix}count holders",
                state.RELEASED,
                count=sfn.JsonPath.array_length(sfn.JsonPath.list_at(state.RELEASED_HOLDERS)),
            ).next(gauge),
        )
        .otherwise(flow.put(f"{prefix}no holders", state.RELEASED, count=0).next(gauge))
    )
    lock = tasks.DynamoDeleteItem(
        s,
        f"{prefix}release lock",
        table=flow.ledger,
        key=lock_key(),
        condition_expression=ledger.LOCK_HELD_BY.text,
        expression_attribute_values=expression_values(
            {":me": dynamo_text(state.decision("decision_id"))}, ledger.LOCK_HELD_BY
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    lock_choice = (
        sfn.Choice(s, f"{prefix}holds lock?")
        .when(sfn.Condition.is_present(state.LOCK), lock)
        .otherwise(then)
    )
    slot.next(cluster_slot).next(left)
    gauge.next(lock_choice)
    lock.next(then)
    if best_effort:
        slot.add_catch(lock_choice, result_path=state.RELEASE_ERROR)
        cluster_slot.add_catch(left, result_path=state.RELEASE_ERROR)
        gauge.add_catch(lock_choice, result_path=state.RELEASE_ERROR)
        lock.add_catch(then, result_path=state.RELEASE_ERROR)
    else:
        flow.guard(slot)
        flow.guard(cluster_slot)
        flow.guard(lock)
    return (
        sfn.Choice(s, f"{prefix}holds slot?")
        .when(sfn.Condition.is_present(state.SLOT), slot)
        .otherwise(lock_choice)
    )
