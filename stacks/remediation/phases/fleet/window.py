"""A fault's fleet window in the flow: its key, whether it is declared, and the judgement
of it (``nodemedic.remediate.fleet.judge``) that the gate, the judgement and the
declaration's mail share."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.remediate import fleet, ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import NOW, Value, formatted, text_at


def key() -> dict[str, Value]:
    """The window of this fault in this node's group."""
    return ledger.key(
        Value.from_string(formatted(ledger.BREAKER_PK, state.GROUP_NAME)),
        Value.from_string(formatted(fleet.FLEET_SK, state.FAULT_ID)),
    )


def declared(at: str) -> sfn.Condition:
    """The verdict read at ``at`` is a fleet event: the node is held, whatever else holds."""
    return sfn.Condition.and_(
        sfn.Condition.is_present(at), sfn.Condition.string_equals(at, fleet.FLEET)
    )


def judged(
    flow: Flow,
    suffix: str,
    *,
    settle: sfn.Wait | None,
    declare: sfn.IChainable,
    then: sfn.IChainable,
) -> sfn.IChainable:
    """Read the window and judge it (``nodemedic.remediate.fleet.judge``): a fleet event
    goes to ``declare``; a window not yet settled waits in ``settle`` and reads again, or,
    without one, goes on to ``then`` like a window that is no fleet event."""
    s = flow.scope
    read = flow.read(f"Read fleet{suffix}", key(), state.FLEET_READ)
    item = f"{state.FLEET_READ}.Item"
    # Plain values for the policy Lambda, not DynamoDB's shapes.
    found = flow.put(
        f"Fleet window found{suffix}",
        state.WINDOW,
        found=True,
        first_at=sfn.JsonPath.string_at(f"{item}.{fleet.FIRST_AT}.N"),
        nodes=sfn.JsonPath.list_at(f"{item}.{fleet.NODES}.SS"),
        verdict=sfn.JsonPath.string_at(f"{item}.{fleet.VERDICT}.S"),
    )
    gone = flow.put(f"No fleet window{suffix}", state.WINDOW, found=False)
    judged = flow.guard(
        tasks.LambdaInvoke(
            s,
            f"Judge fleet{suffix}",
            lambda_function=flow.policy_function,
            payload=sfn.TaskInput.from_object(
                {
                    "op": "fleet",
                    "window": sfn.JsonPath.object_at(state.WINDOW),
                    "instance_id": text_at(state.INSTANCE_ID),
                    "fault_id": text_at(state.FAULT_ID),
                    "group": sfn.JsonPath.object_at(state.GROUP),
                    "now": NOW,
                    "rules": flow.settings.fleet_rules.to_mapping(),
                }
            ),
            payload_response_only=True,
            result_path=state.JUDGED,
        )
    )
    found.next(judged)
    gone.next(judged)
    read.next(
        sfn.Choice(s, f"Fleet window read{suffix}?")
        .when(sfn.Condition.is_present(f"{item}.{fleet.NODES}.SS"), found)
        .otherwise(gone)
    )
    verdict = sfn.Choice(s, f"Fleet settled{suffix}?")
    if settle is not None:
        verdict.when(sfn.Condition.number_greater_than(state.JUDGED_WAIT, 0), settle.next(read))
    judged.next(
        verdict.when(sfn.Condition.boolean_equals(state.JUDGED_FLEET, True), declare).otherwise(
            then
        )
    )
    return read
