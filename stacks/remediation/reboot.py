"""Reboot and verify: remember the reboot, reboot, watch for a new boot id, then give the
Node back, unless no new boot id came or the fault recurred meanwhile: then escalate to a
replacement (``ledger``'s escalation rules)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import ledger, policy
from stacks.remediation import state
from stacks.remediation.flow import Flow
from stacks.remediation.mark import mark_node
from stacks.remediation.render import (
    Value,
    dynamo_now,
    dynamo_text,
    entered_at,
    lock_key,
    reboot_key,
    text_at,
)


def reboot(flow: Flow, *, report: sfn.IChainable, replace: sfn.IChainable) -> sfn.IChainable:
    """Enter ``rebooting``; a node back with its fault gone goes on to the ``report``."""
    s = flow.scope
    marker = flow.guard(
        tasks.DynamoPutItem(
            s,
            "Record reboot",
            table=flow.ledger,
            item={
                **reboot_key(),
                **ledger.reboot_item(
                    at=dynamo_now(), decision_id=dynamo_text(state.decision("decision_id"))
                ),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
    )
    note_on_lock = flow.guard(
        flow.write("Note reboot on lock", lock_key(), ledger.NOTE_REBOOT, {":now": dynamo_now()})
    )
    restart = flow.aws(
        "Reboot instance",
        "ec2",
        "rebootInstances",
        {"InstanceIds": sfn.JsonPath.list_at(state.INSTANCE_IDS)},
        iam_resources=[
            Stack.of(s).format_arn(service="ec2", resource="instance", resource_name="*")
        ],
        result_selector=entered_at(),
        result_path=state.time_of("rebooted"),
    )
    start = flow.step("Start rebooting", "rebooting")
    start.next(marker).next(note_on_lock).next(restart).next(
        _watch(flow, report=report, escalate=_escalate(flow, replace))
    )
    return start


def _watch(flow: Flow, *, report: sfn.IChainable, escalate: sfn.IChainable) -> sfn.IChainable:
    """Poll for a new boot id up to ``reboot_timeout``; once back, a poll to settle, then
    look whether the fault recurred in the meantime."""
    s = flow.scope
    watch_wait = sfn.Wait(s, "Wait for reboot", time=flow.poll)
    status = flow.kube(
        "Node status",
        "node_status",
        {"node": text_at(state.NODE_NAME), "boot_id": text_at(state.BOOT_ID)},
        result_path=state.NODE_STATUS,
    )
    settle = sfn.Wait(s, "Settle", time=flow.poll)
    recurrence = flow.read("Read recurrence", lock_key(), state.LOCK_ITEM)
    clear = flow.kube(
        "Clear",
        "clear",
        {
            "node": text_at(state.NODE_NAME),
            "fault_id": text_at(state.FAULT_ID),
            "condition": text_at(state.decision("condition")),
        },
        result_path=state.time_of("cleared"),
        timed=True,
    )
    timeout = flow.settings.reboot_timeout
    begin = flow.put("Begin watch", state.WATCH, rounds=0)
    begin.next(watch_wait).next(status).next(
        sfn.Choice(s, "Rebooted?")
        .when(sfn.Condition.boolean_equals(state.REBOOTED, True), settle)
        .when(
            sfn.Condition.number_greater_than_equals(state.WATCH_ROUNDS, flow.reboot_rounds),
            flow.put(
                "No new boot id",
                state.ESCALATION,
                escalated=True,
                reason=f"no new boot id within reboot_timeout ({timeout} s)",
            ).next(escalate),
        )
        .otherwise(flow.next_round("Count watch", state.WATCH).next(watch_wait))
    )
    settle.next(recurrence).next(
        sfn.Choice(s, "Fault recurred?")
        .when(
            sfn.Condition.is_present(state.RECURRED),
            flow.put(
                "Recurred",
                state.ESCALATION,
                escalated=True,
                reason="the fault recurred after the reboot",
            ).next(escalate),
        )
        .otherwise(clear)
    )
    clear.next(flow.ended("Rebooted", "rebooted")).next(report)
    return begin


def _escalate(flow: Flow, replace: sfn.IChainable) -> sfn.IChainable:
    """Record why, label the Node for replacement, replace it."""
    record = flow.guard(
        flow.record(
            "Record escalation",
            values={
                "escalated": Value.from_boolean(True),
                "escalation": dynamo_text(state.ESCALATION_REASON),
            },
        )
    )
    record.next(
        mark_node(
            flow,
            "Mark for replacement",
            cordon=True,
            health_status=policy.REPLACEMENT_STATUS,
            when="marked_for_replacement",
        )
    ).next(replace)
    return record
