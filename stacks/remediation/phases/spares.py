"""Spares: a replace in a group that keeps them brings a Standby instance into service right
before the broken one is set Unhealthy, and holds the instance launched in its place back
as the next spare.

Auto Scaling's arithmetic (docs/deploy.md, "Spares"): with D in service and S in Standby the
group's desired capacity is D. ``ExitStandby`` makes it D + 1 with the spare in service;
the broken instance, set Unhealthy, is terminated and replaced to keep D + 1 in service;
``EnterStandby`` with ``ShouldDecrementDesiredCapacity`` moves the newcomer back to the
pool and the group to D. One spare per replace the breaker admitted, never more. A group
with no spare left, or none trusted (``lambdas.kube.spares``), is replaced as without.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from stacks.guardrails import node_group_arns
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import entered_at, text_at


def _standby_call(
    flow: Flow, id: str, action: str, instance: str, **extra: object
) -> tasks.CallAwsService:
    """``ExitStandby`` or ``EnterStandby`` of one instance, allowed only in the groups
    that keep spares; its errors are caught where it is used."""
    groups = flow.settings.spare_groups
    return flow.aws(
        id,
        "autoscaling",
        action,
        {
            "AutoScalingGroupName": text_at(state.GROUP_NAME),
            "InstanceIds": sfn.JsonPath.array(text_at(instance)),
            **extra,
        },
        iam_resources=node_group_arns(Stack.of(flow.scope), groups),
        result_selector=entered_at(),
        result_path=state.time_of(action),
        guard=False,
    )


def take_spare(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """What comes before the broken instance is set Unhealthy (``then``)."""
    groups = flow.settings.spare_groups
    if not groups:
        return then
    s = flow.scope
    # Through the Nodes held back as spares, not the group's instance list (which grows
    # with the group past the 256 KiB a task may return): ExitStandby checks the rest.
    pick = flow.kube(
        "Pick spare",
        "pick_spare",
        {"nodegroup": text_at(state.GROUP_NAME)},
        result_path=state.SPARE,
    )
    leave = _standby_call(flow, "Exit standby", "exitStandby", state.SPARE_INSTANCE)
    # The spare left Standby some other way: replace as without one.
    none_after_all = flow.put("No spare after all", state.SPARE, instance_id=None, node=None)
    leave.add_catch(none_after_all, result_path=state.SPARE_ERROR)
    admit = flow.kube(
        "Admit spare",
        "admit_spare",
        {"node": text_at(state.SPARE_NODE)},
        result_path=state.time_of("spare_admitted"),
        timed=True,
    )
    none_after_all.next(then)
    pick.next(
        sfn.Choice(s, "Spare to use?")
        .when(sfn.Condition.is_string(state.SPARE_INSTANCE), leave.next(admit).next(then))
        .otherwise(then)
    )
    return (
        sfn.Choice(s, "Group keeps spares?")
        .when(
            sfn.Condition.or_(
                *[sfn.Condition.string_equals(state.GROUP_NAME, g) for g in groups],
            ),
            pick,
        )
        .otherwise(then)
    )


def refill(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """After the broken instance's Node is deleted: once its replacement's Node joined, hold
    it back and put it in Standby. Bounded by ``reboot_timeout``; the pool stays one short
    when no newcomer joined by then, or one could not be put in Standby (given back)."""
    if not flow.settings.spare_groups:
        return then
    s = flow.scope
    hold = flow.kube(
        "Hold newcomer as spare",
        "hold_spare",
        {
            "nodegroup": text_at(state.GROUP_NAME),
            "since": text_at(state.SPARE_TAKEN_AT),
        },
        result_path=state.NEWCOMER,
        guard=False,
    )
    hold.add_catch(then, result_path=state.SPARE_ERROR)
    enter = _standby_call(
        flow,
        "Enter standby",
        "enterStandby",
        state.NEWCOMER_INSTANCE,
        ShouldDecrementDesiredCapacity=True,
    )
    give_back = flow.kube(
        "Give newcomer back",
        "admit_spare",
        {"node": text_at(state.NEWCOMER_NODE)},
        result_path=sfn.JsonPath.DISCARD,
        guard=False,
    )
    give_back.add_catch(then, result_path=state.SPARE_ERROR)
    give_back.next(then)
    enter.add_catch(give_back, result_path=state.SPARE_ERROR)
    wait = sfn.Wait(s, "Wait for newcomer", time=flow.poll)
    hold.next(
        sfn.Choice(s, "Newcomer joined?")
        .when(sfn.Condition.is_string(state.NEWCOMER_INSTANCE), enter.next(then))
        .when(
            sfn.Condition.number_greater_than_equals(state.REFILL_ROUNDS, flow.reboot_rounds),
            then,
        )
        .otherwise(wait)
    )
    wait.next(flow.next_round("Count refill", state.REFILL)).next(hold)
    # Rules are tried in order: a group that keeps no spares has no ``$.spare`` at all.
    return (
        sfn.Choice(s, "Spare used?")
        .when(sfn.Condition.not_(sfn.Condition.is_present(state.SPARE_INSTANCE)), then)
        .when(
            sfn.Condition.is_string(state.SPARE_INSTANCE),
            flow.put("Begin refill watch", state.REFILL, rounds=0).next(hold),
        )
        .otherwise(then)
    )
