"""Draining: the group's ``wait_before_acting`` first, then kube ``drain`` rounds until the
Node is empty, backing off while a PodDisruptionBudget blocks, failing once the rounds the
group's ``drain_timeout`` allows are spent (both from the plan: a group may set its own)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate import policy
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import NOW, dynamo_json, text_at
from stacks.remediation.phases.resume import find_jobs


def drain(flow: Flow, *, failure: sfn.IChainable, act: sfn.IChainable) -> sfn.IChainable:
    """Wait where the group asks, enter ``draining``; once drained, on to ``act``."""
    s = flow.scope
    st = flow.settings
    drain_round = flow.kube(
        "Drain",
        "drain",
        {
            "node": text_at(state.NODE_NAME),
            "started_at": text_at(state.DRAIN_STARTED_AT),
            "timeout_seconds": sfn.JsonPath.number_at(state.DRAIN_TIMEOUT),
            "force": sfn.JsonPath.string_at(state.FORCE_DRAIN),
            "settle_seconds": policy.drain_settle(st.poll_seconds),
        },
        result_path=state.DRAINED,
    )
    save_pods = flow.guard(
        flow.record("Record pods", values={"pods": dynamo_json(state.DRAINED_PODS)})
    )
    drain_done = sfn.Choice(s, "Drained?")
    drain_wait = sfn.Wait(s, "Wait for drain", time=sfn.WaitTime.seconds_path(state.DRAIN_WAIT))
    started_at = sfn.JsonPath.string_at(state.DRAIN_STARTED_AT)
    wait = sfn.JsonPath.number_at(state.DRAIN_WAIT)
    backoff = flow.put(
        "Back off",
        state.DRAIN,
        started_at=started_at,
        rounds=sfn.JsonPath.number_at(state.DRAIN_ROUNDS),
        wait=sfn.JsonPath.math_add(wait, wait),
    )
    drained = flow.put("Drained", state.time_of("drained"), at=NOW).next(act)
    stuck = flow.found_error(
        "Drain stuck",
        "DrainTimeout",
        "pods still on node {} after the drain rounds",
        state.NODE_NAME,
    )
    drain_done.when(sfn.Condition.boolean_equals(state.DRAIN_DONE, True), drained).when(
        sfn.Condition.number_greater_than_equals_json_path(
            state.DRAIN_ROUNDS, state.DRAIN_ROUNDS_LIMIT
        ),
        stuck.next(failure),
    ).when(
        sfn.Condition.and_(
            sfn.Condition.is_present(state.DRAIN_BLOCKED),
            sfn.Condition.number_less_than(
                state.DRAIN_WAIT, policy.max_drain_wait(st.poll_seconds)
            ),
        ),
        backoff.next(drain_wait),
    ).otherwise(drain_wait)
    drain_wait.next(
        flow.next_round("Count drain", state.DRAIN, started_at=started_at, wait=wait)
    ).next(drain_round)
    start = flow.step("Start draining", "draining")
    start.next(
        flow.put("Begin drain", state.DRAIN, started_at=NOW, rounds=0, wait=st.poll_seconds)
    ).next(find_jobs(flow, drain_round))
    drain_round.next(
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
