"""Replacing: set the instance Unhealthy for its Auto Scaling group to replace, wait until it
terminates, delete its Node; in a group that keeps spares, bring one into service first and
refill the pool after (``spares``). A HyperPod node (``hyperpod``) or a Karpenter one
(``karpenter``) is replaced its substrate's way instead."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn

from stacks.guardrails import node_group_arns
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import entered_at, text_at
from stacks.remediation.phases import hyperpod, karpenter, spares

TERMINATING = ("Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated")
"""Lifecycle states of an instance on its way out: it no longer needs waiting for."""


def replace(flow: Flow, *, report: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """Enter ``replacing``; a deleted Node goes on to the ``report``."""
    s = flow.scope
    # With no node group configured, stacks/guardrails.py denies every group.
    groups = node_group_arns(Stack.of(s), flow.settings.node_groups) or ["*"]
    unhealthy = flow.aws(
        "Set instance unhealthy",
        "autoscaling",
        "setInstanceHealth",
        {
            "InstanceId": sfn.JsonPath.string_at(state.INSTANCE_ID),
            "HealthStatus": "Unhealthy",
            "ShouldRespectGracePeriod": False,
        },
        iam_resources=groups,
        result_selector=entered_at(),
        result_path=state.time_of("replaced"),
    )
    check = flow.auto_scaling_instance(
        "Check termination", keep="states", field="LifecycleState", result_path=state.LIFECYCLE
    )
    term_wait = sfn.Wait(s, "Wait for termination", time=flow.poll)
    delete = flow.kube(
        "Delete node",
        "delete_node",
        {"node": text_at(state.NODE_NAME)},
        result_path=state.time_of("deleted"),
        timed=True,
    )
    gone = sfn.Condition.or_(
        sfn.Condition.is_not_present(state.LIFECYCLE_STATE),
        *[sfn.Condition.string_equals(state.LIFECYCLE_STATE, t) for t in TERMINATING],
    )
    not_terminated = flow.found_error(
        "Not terminated",
        "TerminationTimeout",
        "instance {} was not terminating within reboot_timeout",
        state.INSTANCE_ID,
    )
    start = flow.step("Start replacing", "replacing")
    replaced = flow.ended("Replaced", "replaced")
    replaced.next(report)
    start.next(_where(flow, spares.take_spare(flow, then=unhealthy), delete, replaced, failure))
    unhealthy.next(flow.put("Begin termination watch", state.TERM, rounds=0)).next(check).next(
        sfn.Choice(s, "Terminating?")
        .when(gone, delete)
        .when(
            sfn.Condition.number_greater_than_equals(state.TERM_ROUNDS, flow.reboot_rounds),
            not_terminated.next(failure),
        )
        .otherwise(term_wait)
    )
    term_wait.next(flow.next_round("Count termination", state.TERM)).next(check)
    delete.next(spares.refill(flow, then=replaced))
    return start


def _where(
    flow: Flow,
    autoscaling: sfn.IChainable,
    delete: sfn.IChainable,
    replaced: sfn.IChainable,
    failure: sfn.IChainable,
) -> sfn.IChainable:
    """The replacement the node's substrate makes: HyperPod's (then the Node is deleted),
    Karpenter's (which deletes the Node itself), else the Auto Scaling group's."""
    if not (hyperpod.listed(flow) or karpenter.listed(flow)):
        return autoscaling
    where = sfn.Choice(flow.scope, "Replace where?")
    if hyperpod.listed(flow):
        where.when(hyperpod.on_hyperpod(), hyperpod.replace(flow, then=delete, failure=failure))
    if karpenter.listed(flow):
        where.when(
            karpenter.on_karpenter(), karpenter.replace(flow, then=replaced, failure=failure)
        )
    return where.otherwise(autoscaling)
