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
    return _reread(
        flow,
        ("Held by the breaker?", "Read fleet after hold", "Fleet event declared meanwhile?"),
        sfn.Condition.boolean_equals(state.HELD, True),
        hold=hold,
        then=then,
    )


def while_held(flow: Flow, *, hold: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """A round of the breaker's hold: a node the quarantine cordoned reads its window, and is
    given back (``hold``) as soon as it is declared a fleet event, not once admitted."""
    return _reread(
        flow,
        ("Quarantined while held?", "Read fleet while held", "Fleet event declared while held?"),
        sfn.Condition.is_present(state.QUARANTINED_AT),
        hold=hold,
        then=then,
    )


def _reread(
    flow: Flow,
    names: tuple[str, str, str],
    when: sfn.Condition,
    *,
    hold: sfn.IChainable,
    then: sfn.IChainable,
) -> sfn.IChainable:
    """Where ``when`` holds, the fault's fleet window read again: ``hold`` once it is declared
    a fleet event, else ``then``; the states named (asked, read, declared?) as ``names``."""
    asked, reading, declared_yet = names
    read = flow.read(reading, key(), state.FLEET_READ)
    read.next(
        sfn.Choice(flow.scope, declared_yet)
        .when(declared(state.FLEET_READ_VERDICT), hold)
        .otherwise(then)
    )
    return sfn.Choice(flow.scope, asked).when(when, read).otherwise(then)
