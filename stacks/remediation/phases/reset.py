"""Resetting one GPU in place (``gpu_reset``): the rung below a reboot.

The drain freed the GPU (only the pods the Node's device record names as its holders: the
plan's ``devices``); the node runs ``nodemedic.health.gpu_reset`` through SSM Run Command,
as the Command document the stack ships (docs/security.md): it refuses while a process
holds the GPU, resets it alone and checks that it answers. A command that succeeds gives the
node back; one that fails, times out or does not verify reboots the node (``reboot``, and
from there the replacement), as does a second reset of the same GPU within
``escalation_window`` (``ledger.RESET_FRESH``), a command SSM refuses (a node it does not
manage; throttling and server errors are retried first) or whose end it does not tell, and
a stronger decision or a recurrence flagged on the lock meanwhile; before any reboot the
pods still on the node's other GPUs are drained too. The ledger's outcome says which rung
healed the node: ``reset``, or the reboot's with the reason the reset gave way in
``escalation``."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.kube import STATUS_OF_ACTION
from nodemedic.health import gpu_reset
from nodemedic.remediate import ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    NOW,
    Value,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    formatted,
    lock_key,
    text_at,
)
from stacks.remediation.phases.drain import begin, drain_round, until_drained
from stacks.remediation.phases.mark import give_way
from stacks.unscoped import unscoped

RESET_OUTCOME = "reset"
RUNNING = ("Pending", "InProgress", "Delayed")
"""SSM's invocation statuses of a command not ended yet."""
SSM_TRANSIENT = (
    "Ssm.ThrottlingException",
    "Ssm.InternalServerErrorException",
    # What an error SSM's API model does not name comes as: the service's own exception.
    "Ssm.SsmException",
)
"""SSM's refusals that pass (throttling, a server error): retried before the reset gives way."""
SSM_RETRIES = 3


def reset(
    flow: Flow, *, report: sfn.IChainable, reboot: sfn.IChainable, failure: sfn.IChainable
) -> sfn.IChainable:
    """Enter ``resetting``; a GPU reset and verified goes on to the ``report``, any other
    way to the ``reboot``, once the pods the drain left on the node's other GPUs are gone
    too (a reboot stops every pod: each is evicted first, under its PodDisruptionBudget)."""
    s = flow.scope
    rest = drain_round(flow, "Drain the rest", None)
    drain_rest = begin(flow, "Begin draining the rest")
    drain_rest.next(rest).next(
        until_drained(flow, rest, label=" of the rest", drained=reboot, failure=failure)
    )
    fallback = give_way(
        flow,
        "Record reset fallback",
        "Mark for reboot",
        health_status=STATUS_OF_ACTION["reboot"],
        when="marked_for_reboot",
        then=drain_rest,
    )
    again = flow.put(
        "Reset again",
        state.ESCALATION,
        escalated=True,
        reason=formatted(
            "GPU {} was reset less than escalation_window "
            f"({flow.settings.escalation_window} s) ago",
            state.GPU,
        ),
    )
    again.next(fallback)
    marker = flow.write(
        "Record GPU reset",
        ledger.key(
            dynamo_text(state.INSTANCE_ID),
            Value.from_string(formatted(ledger.RESET_SK, state.GPU)),
        ),
        ledger.NOTE_RESET,
        {
            ":now": dynamo_number(state.NOW_EPOCH),
            ":me": dynamo_text(state.decision("decision_id")),
            ":since": dynamo_number(state.RESET_SINCE),
        },
        condition=ledger.RESET_FRESH,
    )
    marker.add_catch(again, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    stack = Stack.of(s)
    document = ssm.CfnDocument(
        s, "GpuResetDocument", content=gpu_reset.document(), document_type="Command"
    )
    send = flow.aws(
        "Send GPU reset",
        "ssm",
        "sendCommand",
        {
            "DocumentName": document.ref,
            "InstanceIds": sfn.JsonPath.list_at(state.INSTANCE_IDS),
            "Comment": "nodemedic GPU reset",
            "Parameters": {gpu_reset.PARAMETER: sfn.JsonPath.array(text_at(state.GPU))},
        },
        iam_resources=[
            stack.format_arn(service="ssm", resource="document", resource_name=document.ref),
            stack.format_arn(service="ec2", resource="instance", resource_name="*"),
        ],
        result_selector={"command_id": sfn.JsonPath.string_at("$.Command.CommandId"), "at": NOW},
        result_path=state.time_of("reset"),
        guard=False,
    )
    # A node SSM does not manage (InvalidInstanceId, the common refusal), a document or a
    # role it refuses, an outage outlasting the retries: the reset cannot run, the reboot can.
    _ssm_refusals(flow, send, "SSM refused the GPU reset of {}: {}", fallback)
    start = flow.step("Start resetting", "resetting")
    start.next(flow.guard(marker)).next(send).next(
        _watch(flow, report=report, fallback=fallback, reboot=drain_rest)
    )
    return start


def _ssm_refusals(
    flow: Flow, task: tasks.CallAwsService, reason: str, fallback: sfn.IChainable
) -> None:
    """``task``'s passing refusals retried; then any error gives way to the reboot
    (``fallback``), with ``reason`` (the GPU, then SSM's error) as the escalation's."""
    task.add_retry(
        errors=list(SSM_TRANSIENT),
        max_attempts=SSM_RETRIES,
        interval=Duration.seconds(flow.settings.poll_seconds),
        backoff_rate=2,
    )
    refused = flow.put(
        f"{task.node.id}: refused",
        state.ESCALATION,
        escalated=True,
        reason=formatted(reason, state.GPU, f"{state.RESET_ERROR}.Error"),
    )
    refused.next(fallback)
    task.add_catch(refused, errors=[sfn.Errors.ALL], result_path=state.RESET_ERROR)


def _watch(
    flow: Flow, *, report: sfn.IChainable, fallback: sfn.IChainable, reboot: sfn.IChainable
) -> sfn.IChainable:
    """Poll the command up to ``reboot_timeout``; once it succeeded, give the node back
    unless the lock was flagged in the meantime."""
    s = flow.scope
    wait = sfn.Wait(s, "Wait for reset", time=flow.poll)
    status = flow.aws(
        "Reset status",
        "ssm",
        "getCommandInvocation",
        {
            "CommandId": text_at(state.RESET_COMMAND_ID),
            "InstanceId": text_at(state.INSTANCE_ID),
        },
        iam_resources=unscoped("ssm", "getCommandInvocation"),
        result_selector={
            "status": sfn.JsonPath.string_at("$.Status"),
            "output": sfn.JsonPath.string_at("$.StandardOutputContent"),
        },
        result_path=state.RESET_STATUS,
        guard=False,
    )
    # SSM may not know the invocation yet right after SendCommand.
    status.add_retry(
        errors=["Ssm.InvocationDoesNotExistException"],
        max_attempts=3,
        interval=Duration.seconds(flow.settings.poll_seconds),
    )
    # Unread, the command's end is unknown: the reboot ends it, whatever it did.
    _ssm_refusals(flow, status, "SSM did not say how the GPU reset of {} went: {}", fallback)
    running = sfn.Condition.or_(
        *[sfn.Condition.string_equals(state.RESET_STATUS_NAME, r) for r in RUNNING]
    )
    timeout = flow.settings.reboot_timeout
    # A flag on the lock (a stronger decision, a recurrence): the reboot reads it and
    # escalates from there.
    give_back = flow.write(
        "Note reset give-back on lock",
        lock_key(),
        ledger.GIVE_BACK,
        {":now": dynamo_now()},
        condition=ledger.UNFLAGGED,
    )
    give_back.add_catch(reboot, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    clear = flow.kube(
        "Clear after reset",
        "clear",
        {
            "node": text_at(state.NODE_NAME),
            "fault_id": text_at(state.FAULT_ID),
            "condition": text_at(state.decision("condition")),
        },
        result_path=state.time_of("cleared"),
        timed=True,
    )
    flow.guard(give_back).next(clear).next(flow.ended("GPU reset", RESET_OUTCOME)).next(report)
    begin = flow.put("Begin reset watch", state.RESET_WATCH, rounds=0)
    begin.next(wait).next(status).next(
        sfn.Choice(s, "Reset done?")
        .when(sfn.Condition.string_equals(state.RESET_STATUS_NAME, "Success"), give_back)
        .when(
            sfn.Condition.and_(
                running,
                sfn.Condition.number_greater_than_equals(
                    state.RESET_WATCH_ROUNDS, flow.reboot_rounds
                ),
            ),
            flow.put(
                "Reset unanswered",
                state.ESCALATION,
                escalated=True,
                reason=f"the GPU reset did not end within reboot_timeout ({timeout} s)",
            ).next(fallback),
        )
        .when(running, flow.next_round("Count reset watch", state.RESET_WATCH).next(wait))
        .otherwise(
            flow.put(
                "Reset failed",
                state.ESCALATION,
                escalated=True,
                reason=formatted(
                    "GPU reset of {} {}: {}",
                    state.GPU,
                    state.RESET_STATUS_NAME,
                    state.RESET_OUTPUT,
                ),
            ).next(fallback)
        )
    )
    return begin
