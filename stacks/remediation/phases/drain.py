"""Draining: the group's ``wait_before_acting`` first, then kube ``drain`` rounds until the
Node is empty, backing off while a PodDisruptionBudget blocks, failing once the rounds the
group's ``drain_timeout`` allows are spent (both from the plan: a group may set its own)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import policy
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import NOW, dynamo_json, text_at
from stacks.remediation.phases.resume import find_jobs


def drain_round(flow: Flow, name: str, devices: Any) -> tasks.LambdaInvoke:
    """One kube ``drain`` round of the Node; ``devices`` (a JSONPath, or None for every pod)
    limits it to the pods holding them (docs/contracts.md)."""
    return flow.kube(
        name,
        "drain",
        {
            "node": text_at(state.NODE_NAME),
            "started_at": text_at(state.DRAIN_STARTED_AT),
            "timeout_seconds": sfn.JsonPath.number_at(state.DRAIN_TIMEOUT),
            "force": sfn.JsonPath.string_at(state.FORCE_DRAIN),
            "settle_seconds": policy.drain_settle(flow.settings.poll_seconds),
            "devices": devices,
        },
        result_path=state.DRAINED,
    )


def begin(flow: Flow, name: str) -> sfn.Pass:
    """A drain's first round starts now, its backoff at one poll."""
    return flow.put(name, state.DRAIN, started_at=NOW, rounds=0, wait=flow.settings.poll_seconds)


def until_drained(
    flow: Flow,
    round_: sfn.IChainable,
    *,
    label: str,
    drained: sfn.IChainable,
    failure: sfn.IChainable,
) -> sfn.Choice:
    """After each ``round_``: on to ``drained`` once the Node is empty, to ``failure`` once
    the rounds are spent, else wait (backing off while a PodDisruptionBudget blocks) and go
    again. ``label`` tells this loop's states from another's."""
    s = flow.scope
    done = sfn.Choice(s, f"Drained{label}?")
    wait_state = sfn.Wait(
        s, f"Wait for drain{label}", time=sfn.WaitTime.seconds_path(state.DRAIN_WAIT)
    )
    started_at = sfn.JsonPath.string_at(state.DRAIN_STARTED_AT)
    wait = sfn.JsonPath.number_at(state.DRAIN_WAIT)
    backoff = flow.put(
        f"Back off{label}",
        state.DRAIN,
        started_at=started_at,
        rounds=sfn.JsonPath.number_at(state.DRAIN_ROUNDS),
        wait=sfn.JsonPath.math_add(wait, wait),
    )
    stuck = flow.found_error(
        f"Drain stuck{label}",
        "DrainTimeout",
        "pods still on node {} after the drain rounds",
        state.NODE_NAME,
    )
    done.when(sfn.Condition.boolean_equals(state.DRAIN_DONE, True), drained).when(
        sfn.Condition.number_greater_than_equals_json_path(
            state.DRAIN_ROUNDS, state.DRAIN_ROUNDS_LIMIT
        ),
        stuck.next(failure),
    ).when(
        sfn.Condition.and_(
            sfn.Condition.is_present(state.DRAIN_BLOCKED),
            sfn.Condition.number_less_than(
                state.DRAIN_WAIT, policy.max_drain_wait(flow.settings.poll_seconds)
            ),
        ),
        backoff.next(wait_state),
    ).otherwise(wait_state)
    wait_state.next(
        flow.next_round(f"Count drain{label}", state.DRAIN, started_at=started_at, wait=wait)
    ).next(round_)
    return done


def drain(flow: Flow, *, failure: sfn.IChainable, act: sfn.IChainable) -> sfn.IChainable:
    """Wait where the group asks, enter ``draining``; once drained, on to ``act``. A GPU
    reset drains only the pods on its GPU (the plan's ``devices``)."""
    s = flow.scope
    first = drain_round(flow, "Drain", sfn.JsonPath.list_at(state.DRAIN_DEVICES))
    save_pods = flow.guard(
        flow.record("Record pods", values={"pods": dynamo_json(state.DRAINED_PODS)})
    )
    drained = flow.put("Drained", state.time_of("drained"), at=NOW).next(act)
    drain_done = until_drained(flow, first, label="", drained=drained, failure=failure)
    start = flow.step("Start draining", "draining")
    start.next(begin(flow, "Begin drain")).next(find_jobs(flow, first))
    first.next(
        sfn.Choice(s, "First round?")
        .when(sfn.Condition.number_equals(state.DRAIN_ROUNDS, 0), save_pods.next(drain_done))
        .otherwise(drain_done)
    )
    wait_first = sfn.Wait(
        s, "Wait before acting", time=sfn.WaitTime.seconds_path(state.WAIT_BEFORE_ACTING)
    )
    wait_first.next(start)
    return (
        sfn.Choice(s, "Wait first?")
        .when(sfn.Condition.number_greater_than(state.WAIT_BEFORE_ACTING, 0), wait_first)
        .otherwise(start)
    )
