"""The request reconcile: every ``REQUESTS_SECONDS`` (an EventBridge schedule), the Nodes
whose health label a person set to ``UnschedulablePendingReboot`` or
``UnschedulablePendingReplacement`` (the kube Lambda's ``requested`` op), each started on
the remediation state machine as the manual decision the op made of it.

EKS emits no event for a label change, so the requests are asked for. A node whose lock is
held and unexpired waits for a later tick: started now, its decision would end as a
duplicate and its name, the request's, could never start again. The execution is named by
the decision id, which comes from when the label was written: a request seen again at the
next tick (its remediation not yet at the cordon) starts nothing twice, and Step Functions'
``ExecutionAlreadyExists`` means it was answered already. The output names the nodes it
started: ``{count, nodes}``.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate import ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import lock_key, text_at
from stacks.remediation.kit.starts import start_remediation

REQUESTS_SECONDS: Final = 60
"""How often the labels are read: a request starts within a minute of its label."""

REQUESTED: Final = "$.requested"
"""The kube ``requested`` op's answer: ``{nodes: [{node, instance_id, decision}]}``."""
ANSWERED: Final = "$.answered"
"""One result per request: ``{node}`` when this run started it, ``{}`` when not."""
STARTED: Final = "$.started"
"""``{count, nodes}``: the requests this run started."""

# The state of one iteration: the request, and the lock of its node.
NODE: Final = "$.node"
INSTANCE: Final = "$.instance_id"
DECISION: Final = "$.decision"
NOW: Final = "$.now"
LOCK: Final = "$.lock"
EXPIRY: Final = "$.expiry"
"""``{at}``: the lock's ``expires_at`` as a number (GetItem gives numbers as strings)."""


def answer_requests(flow: Flow, remediation: sfn.IStateMachine) -> sfn.IChainable:
    """The state machine's first state; its input (the schedule's event) is not read."""
    s = flow.scope
    listed = flow.kube(
        "List requested nodes",
        "requested",
        {"cluster": flow.settings.name},
        result_path=REQUESTED,
        guard=False,
    )
    each = sfn.Map(
        s,
        "Answer each request",
        items_path=f"{REQUESTED}.nodes",
        item_selector={
            "node": text_at("$$.Map.Item.Value.node"),
            "instance_id": text_at("$$.Map.Item.Value.instance_id"),
            "decision": sfn.JsonPath.object_at("$$.Map.Item.Value.decision"),
            "now": sfn.JsonPath.number_at(state.CLOCK_EPOCH),
        },
        max_concurrency=4,
        result_path=ANSWERED,
    ).item_processor(_answer(flow, remediation))
    count = flow.put(
        "Count started",
        STARTED,
        count=sfn.JsonPath.array_length(sfn.JsonPath.list_at(f"{ANSWERED}[*].node")),
        nodes=sfn.JsonPath.list_at(f"{ANSWERED}[*].node"),
    )
    start = flow.clock("Clock", guard=False)
    start.next(listed).next(each).next(count).next(
        sfn.Succeed(s, "Requests answered", output_path=STARTED)
    )
    return start


def _answer(flow: Flow, remediation: sfn.IStateMachine) -> sfn.IChainable:
    """One request: started, or left for a later tick while its node's lock is held."""
    s = flow.scope
    started = flow.put("Started", "$", node=text_at(NODE))
    begin = start_remediation(
        s,
        "Start remediation",
        remediation,
        name=text_at(f"{DECISION}.decision_id"),
        # The decision as it is, as ``nodemedic reboot|replace`` starts it: no parent id.
        input=sfn.TaskInput.from_json_path_at(DECISION),
        already=sfn.Pass(s, "Already started", result=sfn.Result.from_object({})),
    )
    begin.next(started)
    wait = sfn.Pass(s, "Lock held", result=sfn.Result.from_object({}))
    expiry = flow.put(
        "Lock expiry",
        EXPIRY,
        at=sfn.JsonPath.string_to_json(text_at(f"{LOCK}.Item.{ledger.EXPIRES_AT}.N")),
    )
    expiry.next(
        sfn.Choice(s, "Lock live?")
        .when(sfn.Condition.number_greater_than_equals_json_path(f"{EXPIRY}.at", NOW), wait)
        .otherwise(begin)
    )
    read = flow.read("Read node lock", lock_key(INSTANCE), LOCK, guard=False)
    read.next(
        sfn.Choice(s, "Locked?")
        .when(sfn.Condition.is_present(f"{LOCK}.Item.{ledger.EXPIRES_AT}"), expiry)
        .otherwise(begin)
    )
    return read
