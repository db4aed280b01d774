"""The fleet sighting: an acting decision's node counted in its fault's window, right after
planning (``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.kube import PLANNED_SOURCE
from nodemedic.remediate import fleet
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import Value, dynamo_instance_set, dynamo_number
from stacks.remediation.phases.fleet.window import key


def sight(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Count an acting decision's node in its fault's window, then ``then``."""
    s = flow.scope
    window = flow.put(
        "Fleet window",
        state.FLEET,
        since=sfn.JsonPath.math_add(
            sfn.JsonPath.number_at(state.NOW_EPOCH), -flow.settings.fleet_window
        ),
    )
    common = {
        ":me": dynamo_instance_set(),
        ":at": dynamo_number(state.NOW_EPOCH),
        ":since": dynamo_number(state.FLEET_SINCE),
    }
    verdict = {"verdict": sfn.JsonPath.string_at(f"$.Attributes.{fleet.VERDICT}.S")}
    join = flow.write(
        "Join fleet window",
        key(),
        fleet.JOIN,
        common,
        condition=fleet.IN_WINDOW,
        return_values=tasks.DynamoReturnValues.ALL_NEW,
        result_selector=verdict,
        result_path=state.FLEET,
    )
    reopen = flow.write(
        "Open fleet window",
        key(),
        fleet.REOPEN,
        {**common, ":open": Value.from_string(fleet.OPEN)},
        condition=fleet.EXPIRED,
        return_values=tasks.DynamoReturnValues.ALL_NEW,
        result_selector=verdict,
        result_path=state.FLEET,
    )
    # Each fails only when the other would succeed: a window opened (or ran out) between.
    join.add_catch(reopen, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    reopen.add_catch(join, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    flow.guard(join).next(then)
    flow.guard(reopen).next(then)
    return (
        sfn.Choice(s, "Acting?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.string_equals(state.MODE, "act"),
                # AWS says why a planned decision's node goes: no rollout, no job; and a
                # Capacity Block's nodes all go at once.
                sfn.Condition.not_(
                    sfn.Condition.string_equals(state.decision("source"), PLANNED_SOURCE)
                ),
            ),
            window.next(join),
        )
        .otherwise(then)
    )
