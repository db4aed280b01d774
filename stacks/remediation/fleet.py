"""Fleet correlation in the flow: sight, gate, and judge before the irreversible step.

The rules and the arithmetic are ``nodemedic.remediate.fleet``'s. Here they become states:

- ``sight`` (acting plans, right after planning, before the lock and the breaker): one
  conditional update adds the node to its fault's window in its group, or opens a new
  window. No wait: the cordon is as quick as before.
- ``gate`` (once the node lock is taken, before the breaker): a window already declared
  a fleet event, or one that this sighting makes one (judged at once, no settle), makes
  this decision monitor-only from the start (``hold``), never cordoned.
- ``recheck`` (once admitted, for a decision the breaker held): the event may have been
  declared while it waited.
- ``judge`` (drained, right before reboot or replace): wait until ``fleet_settle`` has
  passed since the window opened, then judge; a fleet event is declared by one
  conditional write, whose winner sends the one notification listing the nodes.
- ``hold``: the node is given back marked (``kube hold``: condition, health label, the
  fleet label and condition; taint and cordon off), and the report ends the remediation
  with the outcome ``fleet`` (no mail of its own), releasing its slot and lock.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.stack import FLEET_HELD_STATE
from nodemedic.remediate import fleet, ledger
from stacks.remediation import state
from stacks.remediation.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.mark import marking
from stacks.remediation.render import (
    NOW,
    Value,
    dynamo_instance_set,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    formatted,
    text_at,
)
from stacks.remediation.signals import notify


def _key() -> dict[str, Value]:
    """The window of this fault in this node's group."""
    return ledger.key(
        Value.from_string(formatted(ledger.BREAKER_PK, state.GROUP_NAME)),
        Value.from_string(formatted(fleet.FLEET_SK, state.FAULT_ID)),
    )


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
        _key(),
        fleet.JOIN,
        common,
        condition=fleet.IN_WINDOW,
        return_values=tasks.DynamoReturnValues.ALL_NEW,
        result_selector=verdict,
        result_path=state.FLEET,
    )
    reopen = flow.write(
        "Open fleet window",
        _key(),
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
        .when(sfn.Condition.string_equals(state.MODE, "act"), window.next(join))
        .otherwise(then)
    )


def _declared(at: str) -> sfn.Condition:
    return sfn.Condition.and_(
        sfn.Condition.is_present(at), sfn.Condition.string_equals(at, fleet.FLEET)
    )


def gate(
    flow: Flow, *, hold: sfn.IChainable, declare: sfn.IChainable, then: sfn.IChainable
) -> sfn.IChainable:
    """Before the breaker: a sighting of a declared fleet event is monitor-only from the
    start, and so is the one that makes its window a fleet event (it declares it). Only
    the first ``fleet_min_nodes`` - 1 of a storm go on, so the storm neither fills the
    breaker's slots nor spends its rate limits."""
    early = _judged(flow, " now", settle=None, declare=declare, then=then)
    return (
        sfn.Choice(flow.scope, "Fleet event declared?")
        .when(_declared(state.FLEET_VERDICT), hold)
        .otherwise(early)
    )


def recheck(flow: Flow, *, hold: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """A decision the breaker held reads its window again before the cordon."""
    s = flow.scope
    read = flow.read("Read fleet after hold", _key(), state.FLEET_READ)
    read.next(
        sfn.Choice(s, "Fleet event declared meanwhile?")
        .when(_declared(state.FLEET_READ_VERDICT), hold)
        .otherwise(then)
    )
    return (
        sfn.Choice(s, "Held by the breaker?")
        .when(sfn.Condition.boolean_equals(state.HELD, True), read)
        .otherwise(then)
    )


def judge(flow: Flow, *, declare: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """Right before reboot or replace: wait for the window to settle, then ``then``, or
    ``declare`` the fleet event."""
    settle = sfn.Wait(flow.scope, "Fleet settle", time=sfn.WaitTime.seconds_path(state.JUDGED_WAIT))
    return _judged(flow, "", settle=settle, declare=declare, then=then)


def _judged(
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
    read = flow.read(f"Read fleet{suffix}", _key(), state.FLEET_READ)
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


def declaring(flow: Flow, *, hold: sfn.IChainable) -> sfn.IChainable:
    """Declare the fleet event judged (``state.JUDGED``) by one conditional write, then
    ``hold``. The write's winner mails the one notification once the window has settled,
    judged again so that it lists every node of the storm (its own node is not cordoned:
    the wait costs nothing)."""
    declare = flow.write(
        "Declare fleet event",
        _key(),
        fleet.DECLARE,
        {
            ":fleet": Value.from_string(fleet.FLEET),
            ":open": Value.from_string(fleet.OPEN),
            ":now": dynamo_now(),
            ":me": dynamo_text(state.decision("decision_id")),
            ":first": dynamo_number(state.JUDGED_FIRST_AT),
        },
        condition=fleet.DECLARABLE,
    )
    # Declared already (by another node's remediation, which mailed it): hold, quietly.
    declare.add_catch(hold, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    mailed = notify(
        flow,
        "Notify fleet event",
        formatted(
            "nodemedic fleet event: {} on {} nodes of {}",
            state.FAULT_ID,
            state.JUDGED_COUNT,
            state.GROUP_NAME,
        ),
        {
            "outcome": fleet.OUTCOME,
            "action": sfn.JsonPath.string_at(state.ACTION),
            "nodes": sfn.JsonPath.list_at(state.JUDGED_NODES),
            "count": sfn.JsonPath.number_at(state.JUDGED_COUNT),
            "summary": sfn.JsonPath.string_at(state.JUDGED_SUMMARY),
        },
    )
    settled = sfn.Wait(
        flow.scope, "Fleet settle to mail", time=sfn.WaitTime.seconds_path(state.JUDGED_SETTLES_IN)
    )
    judged_again = _judged(flow, " to mail", settle=None, declare=mailed, then=mailed)
    flow.guard(declare).next(settled).next(judged_again)
    mailed.next(hold)
    return declare


def hold(flow: Flow, *, report: sfn.IChainable) -> sfn.IChainable:
    """Give the node back marked, as held for a fleet event, and report."""
    st = flow.settings
    why = flow.put(
        "Fleet hold reason",
        state.HOLD_REASON,
        text=formatted(
            "held for a fleet event: {} on at least {} nodes or {} % of group {} within {} s "
            "is a rollout or a job, not hardware; the node is given back, not {}",
            state.FAULT_ID,
            str(st.fleet_min_nodes),
            str(st.fleet_min_percent),
            state.GROUP_NAME,
            str(st.fleet_window),
            state.ACTION,
        ),
    )
    # The reason replaces the plan's, for the ledger and the metrics' report.
    reason = sfn.Pass(
        flow.scope,
        "Fleet hold as reason",
        input_path=state.HOLD_REASON_TEXT,
        result_path=state.REASON,
    )
    held = flow.kube(
        "Hold for fleet event",
        "hold",
        {**marking(), "why": text_at(state.REASON)},
        result_path=state.time_of("held"),
        timed=True,
    )
    start = flow.step("Start holding", "holding")
    start.next(why).next(reason).next(held).next(flow.ended(FLEET_HELD_STATE, fleet.OUTCOME)).next(
        report
    )
    return start
