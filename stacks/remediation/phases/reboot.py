"""Reboot and verify: remember the reboot, reboot, watch for a new boot id, then give the
Node back (with ``post_reboot_deep_check``: leave it cordoned behind the health-check taint
until its deep check passes; outcome ``rebooted-awaiting-deep-check``), unless no new boot
id came or the fault recurred meanwhile: then escalate to a replacement (``ledger``'s
escalation rules). A stronger decision that upgraded the remediation (``upgrade``)
escalates it too: before the reboot, so that a node to be replaced is not rebooted first,
or after it."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.kube import AWAITING_DEEP_CHECK_OUTCOME
from nodemedic.remediate import ledger, policy
from nodemedic.remediate.expressions import Update
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    dynamo_now,
    dynamo_text,
    entered_at,
    formatted,
    lock_key,
    reboot_key,
    text_at,
)
from stacks.remediation.phases import hyperpod
from stacks.remediation.phases.mark import give_way


def reboot(
    flow: Flow, *, report: sfn.IChainable, replace: sfn.IChainable, failure: sfn.IChainable
) -> sfn.IChainable:
    """Enter ``rebooting``; a node back with its fault gone goes on to the ``report``."""
    s = flow.scope
    escalate = give_way(
        flow,
        "Record escalation",
        "Mark for replacement",
        health_status=policy.REPLACEMENT_STATUS,
        when="marked_for_replacement",
        then=replace,
    )
    flagged = _flagged(flow, escalate)
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
    # The reboot happens only if the lock still says so: an upgrade flagged until here is
    # honoured before the node is rebooted, one flagged after it once the node is back.
    note_on_lock = _unflagged(flow, "Note reboot on lock", ledger.NOTE_REBOOT, flagged)
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
    watch = _watch(flow, report=report, escalate=escalate, flagged=flagged)
    restart.next(watch)
    how: sfn.IChainable = restart
    if hyperpod.listed(flow):
        how = (
            sfn.Choice(s, "Reboot where?")
            .when(hyperpod.on_hyperpod(), hyperpod.reboot(flow, then=watch, failure=failure))
            .otherwise(restart)
        )
    start.next(note_on_lock).next(marker).next(how)
    return start


def _unflagged(
    flow: Flow, id: str, change: Update, flagged: sfn.IChainable
) -> tasks.DynamoUpdateItem:
    """``change`` on the lock while nothing asks for an escalation (``ledger.UNFLAGGED``);
    once something does, on to ``flagged``."""
    task = flow.write(id, lock_key(), change, {":now": dynamo_now()}, condition=ledger.UNFLAGGED)
    task.add_catch(flagged, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    return flow.guard(task)


def _flagged(flow: Flow, escalate: sfn.IChainable) -> sfn.IChainable:
    """Read why the lock refused: the fault recurred, or a stronger decision upgraded the
    remediation (one of the two flags made ``ledger.UNFLAGGED`` false, and only this
    execution removes its lock); say so, and escalate."""
    s = flow.scope
    recurrence = flow.read("Read recurrence", lock_key(), state.LOCK_ITEM)
    recurrence.next(
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
        .otherwise(
            flow.put(
                "Stronger fault",
                state.ESCALATION,
                escalated=True,
                reason=formatted(
                    "{} during the remediation calls for a replacement (decision {})",
                    state.UPGRADE_FAULT_ID,
                    state.UPGRADED_BY_DECISION,
                ),
            ).next(escalate)
        )
    )
    return recurrence


def _watch(
    flow: Flow, *, report: sfn.IChainable, escalate: sfn.IChainable, flagged: sfn.IChainable
) -> sfn.IChainable:
    """Poll for a new boot id up to ``reboot_timeout``; once back, a poll to settle, then
    give the node back unless the lock was flagged in the meantime."""
    s = flow.scope
    watch_wait = sfn.Wait(s, "Wait for reboot", time=flow.poll)
    status = flow.kube(
        "Node status",
        "node_status",
        {"node": text_at(state.NODE_NAME), "boot_id": text_at(state.BOOT_ID)},
        result_path=state.NODE_STATUS,
    )
    settle = sfn.Wait(s, "Settle", time=flow.poll)
    give_back = _unflagged(flow, "Note give-back on lock", ledger.GIVE_BACK, flagged)
    cleared = {
        "node": text_at(state.NODE_NAME),
        "fault_id": text_at(state.FAULT_ID),
        "condition": text_at(state.decision("condition")),
    }
    if flow.settings.post_reboot_deep_check:
        clear = _hold(flow, cleared, report)
    else:
        clear = flow.kube(
            "Clear", "clear", cleared, result_path=state.time_of("cleared"), timed=True
        )
        clear.next(flow.ended("Rebooted", "rebooted")).next(report)
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
    settle.next(give_back).next(clear)
    return begin


def _hold(flow: Flow, cleared: dict[str, str], report: sfn.IChainable) -> sfn.IChainable:
    """A new boot id is no proof the accelerators work: the node waits, cordoned, for the
    deep check its agent runs after the boot (``lambdas.kube.gate``), unless that check
    passed already, before the watch saw the node back."""
    hold = flow.kube(
        "Hold for deep check",
        "hold_for_deep_check",
        {
            **cleared,
            "decision_id": text_at(state.decision("decision_id")),
            "rebooted_at": text_at(state.REBOOTED_AT),
            "boot_id": text_at(state.NEW_BOOT_ID),
        },
        result_path=state.GATE,
    )
    held = flow.put("Held", state.time_of("held_for_deep_check"), **entered_at())
    held.next(flow.ended("Rebooted, awaiting deep check", AWAITING_DEEP_CHECK_OUTCOME)).next(report)
    passed = flow.put("Deep check passed", state.time_of("deep_check_passed"), **entered_at())
    passed.next(flow.ended("Rebooted, checked", "rebooted")).next(report)
    hold.next(
        sfn.Choice(flow.scope, "Deep check to come?")
        .when(sfn.Condition.boolean_equals(state.GATE_HELD, True), held)
        .otherwise(passed)
    )
    return hold
