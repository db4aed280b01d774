"""The cleanup after a remediation execution that ended without its failure phase: timed out
(the execution's own timeout, ``policy.execution_timeout``), stopped by hand, or failed on
an error no catch routes (``States.Runtime``). Step Functions runs no state of an execution
after such an end, so an EventBridge rule on the executions' status changes starts this
state machine with the event (``stacks.remediation.machines.aftercare``).

It rebuilds the execution state the failure phase reads from the event's input (the
decision record) and the ledger record, which says where the remediation stopped (its
``state``, the last step entered) and on which node and group (``Flow.step`` writes them),
then runs the very failure phase (``failure``): the Node labelled and conditioned, its lock
parked and its slot kept if it was taken out, the failure recorded, mailed and counted.

A record closed, failed or duplicate means the remediation ended through its own phases;
no record, that it never started (an invalid decision): nothing is left to clean up.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import formatted, record_key, text_at
from stacks.remediation.phases.failure import failure

DECISION: Final = "$.decision"
"""The stopped execution's input, the decision record, parsed from the event."""
STOPPED: Final = "$.stopped"
"""``{status, execution, record}``: how the execution ended, and its ledger record."""
STATUS: Final = f"{STOPPED}.status"
EXECUTION: Final = f"{STOPPED}.execution"
RECORD: Final = f"{STOPPED}.record"
"""The GetItem result of the decision's ledger record."""


def _recorded(field: str) -> str:
    return f"{RECORD}.Item.{field}.S"


FINISHED: Final = ("closed", "failed", "duplicate")
"""Record states of a remediation that ended through its own phases."""
ACTING: Final = ("marking", "draining", "rebooting", "replacing")
"""Steps entered only once the breaker admitted the remediation: its node may be out of
service, and it holds a breaker slot."""


def cleanup(flow: Flow) -> sfn.IChainable:
    """The state machine's first state; its input, an ``Execution Status Change`` event."""
    s = flow.scope
    read_event = sfn.Pass(
        s,
        "Read event",
        parameters={
            "decision": sfn.JsonPath.string_to_json(text_at("$.detail.input")),
            "stopped": {
                "status": text_at("$.detail.status"),
                "execution": text_at("$.detail.executionArn"),
            },
        },
    )
    nothing = sfn.Succeed(s, "Nothing to clean up")
    # What "Resume" reads of the decision; a recorded decision has every other field.
    named = sfn.Condition.and_(
        *[
            sfn.Condition.is_string(state.incoming(f, DECISION))
            for f in ("decision_id", "instance_id", "fault_id", "action")
        ]
    )
    resume = sfn.Pass(
        s,
        "Resume",
        parameters={**state.initial_state(DECISION), "stopped": sfn.JsonPath.object_at(STOPPED)},
    )
    read_record = flow.read("Read record", record_key(), RECORD, guard=False)
    finished = sfn.Condition.or_(
        sfn.Condition.is_not_present(f"{RECORD}.Item"),
        *[sfn.Condition.string_equals(_recorded("state"), name) for name in FINISHED],
    )
    read_event.next(sfn.Choice(s, "A decision?").when(named, resume).otherwise(nothing))
    resume.next(read_record).next(
        sfn.Choice(s, "Left unfinished?").when(finished, nothing).otherwise(_stopped_at(flow))
    )
    return read_event


def _stopped_at(flow: Flow) -> sfn.IChainable:
    """Where and how the remediation stopped, as the failure phase reads it."""
    s = flow.scope
    failed = failure(flow, end=sfn.Succeed(s, "Cleaned up"))
    taken_out = (
        sfn.Choice(s, "Taken out?")
        .when(
            sfn.Condition.or_(
                *[sfn.Condition.string_equals(_recorded("state"), name) for name in ACTING]
            ),
            flow.put("Held a slot", state.SLOT).next(failed),
        )
        .otherwise(failed)
    )
    on_node = (
        flow.put("On node", state.NODE, node=text_at(_recorded("node")))
        .next(flow.put("In group", state.GROUP, name=text_at(_recorded("node_group"))))
        .next(taken_out)
    )
    start = flow.put("Stopped at", state.STEP, name=text_at(_recorded("state")))
    start.next(
        flow.put(
            "Stopped how",
            state.ERROR,
            Error=text_at(STATUS),
            Cause=formatted("execution {} ended {}", EXECUTION, STATUS),
        )
    ).next(
        # The lock is this decision's unless another took it over after it expired: the
        # park and the release are conditional on it being held by this decision.
        flow.put("Held the lock", state.LOCK)
    ).next(
        sfn.Pass(s, "Started at", input_path=_recorded("started_at"), result_path=state.STARTED_AT)
    ).next(
        sfn.Choice(s, "On a node?")
        .when(sfn.Condition.is_present(_recorded("node")), on_node)
        .otherwise(taken_out)
    )
    return start
