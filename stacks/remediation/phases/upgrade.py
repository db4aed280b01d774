"""A stronger decision for a node in flight: it upgrades the remediation there instead of
being dropped as a duplicate.

A decision to replace that finds the lock held by a remediation that will reboot the node
flags an upgrade on the lock (``ledger.UPGRADABLE``, ``ledger.FLAG_UPGRADE``) and ends
recorded as ``upgraded``: the remediation in flight reads the flag before it reboots and
after the reboot, and replaces the node (``reboot``). Too late for that, when the lock
says the node is being given back, the decision waits for the lock and remediates the
node itself once the lock is released (after a few polls, it fails and says so).
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import ledger, policy
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import Value, dynamo_now, dynamo_text, lock_key


def upgrade(
    flow: Flow, *, retake: sfn.IChainable, duplicate: sfn.IChainable, failure: sfn.IChainable
) -> sfn.IChainable:
    """``"Stronger?"``: an acting replacement flags the upgrade; any other decision, and one
    whose flag the lock refuses while its remediation goes on, goes to ``duplicate``; one
    refused because the node is being given back waits, then tries ``retake`` again, and
    goes to ``failure`` once it waited ``policy.LOCK_WAIT_ROUNDS`` polls."""
    s = flow.scope
    flag = flow.guard(
        flow.write(
            "Flag upgrade",
            lock_key(),
            ledger.FLAG_UPGRADE,
            {
                ":now": dynamo_now(),
                ":me": dynamo_text(state.decision("decision_id")),
                ":fault": dynamo_text(state.FAULT_ID),
                ":weaker": Value.from_string(ledger.UPGRADED_FROM),
            },
            condition=ledger.UPGRADABLE,
            return_values=tasks.DynamoReturnValues.ALL_NEW,
            result_selector={"decision_id": sfn.JsonPath.string_at("$.Attributes.decision_id.S")},
            result_path=state.UPGRADED,
        )
    )
    recorded = flow.guard(
        flow.record(
            "Record upgrade",
            record_state="upgraded",
            values={
                "outcome": Value.from_string("upgraded"),
                "upgraded_decision": dynamo_text(state.UPGRADED_DECISION),
                "ended_at": dynamo_now(),
            },
        )
    )
    done = sfn.Succeed(s, "Upgraded", comment="the remediation in flight replaces the node")
    read = flow.read("Read held lock", lock_key(), state.LOCK_ITEM)
    wait = sfn.Wait(s, "Wait for lock", time=flow.poll)
    not_released = flow.found_error(
        "Lock not released",
        "LockNotReleased",
        "the remediation giving node {} back still holds its lock: the stronger fault waits",
        state.INSTANCE_ID,
    )
    flag.add_catch(read, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    flag.next(recorded).next(done)
    read.next(
        sfn.Choice(s, "Giving the node back?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.is_present(state.GIVING_BACK),
                sfn.Condition.number_greater_than_equals(
                    state.LOCK_WAIT_ROUNDS, policy.LOCK_WAIT_ROUNDS
                ),
            ),
            not_released.next(failure),
        )
        .when(
            sfn.Condition.or_(
                sfn.Condition.is_not_present(state.HELD_LOCK),
                sfn.Condition.is_present(state.GIVING_BACK),
            ),
            flow.next_round("Count lock wait", state.LOCK_WAIT).next(wait).next(retake),
        )
        .otherwise(duplicate)
    )
    return (
        sfn.Choice(s, "Stronger?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.string_equals(state.ACTION, ledger.UPGRADED_TO),
                sfn.Condition.string_equals(state.MODE, "act"),
            ),
            flag,
        )
        .otherwise(duplicate)
    )
