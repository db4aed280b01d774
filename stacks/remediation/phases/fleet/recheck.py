"""The fleet recheck: a decision the breaker held reads its window again once admitted,
before the cordon, and a quarantined one at every round of the breaker's hold
(``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.phases.fleet.window import declared, key


def recheck(flow: Flow, *, hold: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """A decision the breaker held reads its window again before the cordon."""
    s = flow.scope
    read = flow.read("Read fleet after hold", key(), state.FLEET_READ)
    read.next(
        sfn.Choice(s, "Fleet event declared meanwhile?")
        .when(declared(state.FLEET_READ_VERDICT), hold)
        .otherwise(then)
    )
    return (
        sfn.Choice(s, "Held by the breaker?")
        .when(sfn.Condition.boolean_equals(state.HELD, True), read)
        .otherwise(then)
    )


def while_held(flow: Flow, *, hold: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """A round of the breaker's hold: a node the quarantine cordoned reads its window, and is
    given back (``hold``) as soon as it is declared a fleet event, not once admitted."""
    s = flow.scope
    read = flow.read("Read fleet while held", key(), state.FLEET_READ)
    read.next(
        sfn.Choice(s, "Fleet event declared while held?")
        .when(declared(state.FLEET_READ_VERDICT), hold)
        .otherwise(then)
    )
    return (
        sfn.Choice(s, "Quarantined while held?")
        .when(sfn.Condition.is_present(state.QUARANTINED_AT), read)
        .otherwise(then)
    )
