"""The fleet gate: once the node lock is taken, before the breaker, a fleet event already
declared, or declared by this sighting, holds the decision (``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.phases.fleet.window import declared, judged


def gate(
    flow: Flow, *, hold: sfn.IChainable, declare: sfn.IChainable, then: sfn.IChainable
) -> sfn.IChainable:
    """Before the breaker: a sighting of a declared fleet event is monitor-only from the
    start, and so is the one that makes its window a fleet event (it declares it). Only
    the first ``fleet_min_nodes`` - 1 of a storm go on, so the storm neither fills the
    breaker's slots nor spends its rate limits."""
    early = judged(flow, " now", settle=None, declare=declare, then=then)
    return (
        sfn.Choice(flow.scope, "Fleet event declared?")
        .when(declared(state.FLEET_VERDICT), hold)
        .otherwise(early)
    )
