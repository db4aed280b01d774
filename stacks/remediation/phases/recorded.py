"""The decision's recorder: an execution acts only on a decision its source's recorder wrote.

Right after ``"Begin"`` and before anything reads the decision for its own sake (the deep
check's verdicts first), the marker of the decision is read from the partition of the
process that makes decisions of its source (``nodemedic.remediate.recorded``): the
classifier's for ``kmsg``, ``health`` and ``deep-check``, the planned Lambda's for
``planned``. It must hold every field of the decision the execution was given, and the
execution must be named by the decision id. A ``manual`` decision goes on without one.

Anything else is forged: ``ForgedDecisions`` is published (its alarm pages) and the
execution ends ``"Refused forged decision"`` with the node untouched and nothing written.
It ends as a success, not a failure: a failed execution starts the cleanup, which acts on
the ledger record its input names, and a forged input may name a live remediation's.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.kube import MANUAL_SOURCE, PLANNED_SOURCE
from nodemedic.contracts.ledger import CLASSIFIED_PK, PLANNED_PK
from nodemedic.contracts.metrics import FORGED_DECISIONS_METRIC
from nodemedic.remediate import ledger
from nodemedic.remediate.recorded import FLAGS, NUMBERS, OPTIONAL_TEXTS, TEXTS
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import Value, dynamo_text, text_at
from stacks.remediation.kit.signals import cluster_metric


def recorded(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Where a decision its recorder did not write turns off the flow; others go to ``then``."""
    s = flow.scope
    forged = cluster_metric(
        flow,
        "Publish forged decision",
        FORGED_DECISIONS_METRIC,
        1,
        cluster=sfn.JsonPath.string_at(state.CLUSTER),
        guard=False,
    )
    refused = sfn.Succeed(
        s, "Refused forged decision", comment="no recorder of its source wrote this decision"
    )
    # The refusal stands whether or not the metric could be published.
    forged.add_catch(refused, result_path=sfn.JsonPath.DISCARD)
    forged.next(refused)
    numbers = flow.put(
        "Recorded as",
        state.RECORDED_AS,
        name=sfn.JsonPath.string_at("$$.Execution.Name"),
        **{
            name: sfn.JsonPath.string_to_json(text_at(state.recorded(f"{name}.N")))
            for name in NUMBERS
        },
    )
    numbers.next(sfn.Choice(s, "As recorded?").when(_as_recorded(), then).otherwise(forged))
    found = (
        sfn.Choice(s, "Recorded?")
        .when(
            sfn.Condition.and_(
                *[sfn.Condition.is_string(state.recorded(f"{name}.N")) for name in NUMBERS]
            ),
            numbers,
        )
        .otherwise(forged)
    )

    def read(id: str, partition: str) -> sfn.IChainable:
        key = ledger.key(Value.from_string(partition), dynamo_text(state.decision("decision_id")))
        task = flow.read(id, key, state.RECORDED, guard=False)
        task.add_retry(
            errors=[sfn.Errors.TASKS_FAILED], max_attempts=3, interval=Duration.seconds(1)
        )
        # A read refused or failed still proves nothing: the decision is not acted on.
        task.add_catch(forged, result_path=sfn.JsonPath.DISCARD)
        return task.next(found)

    source = state.decision("source")
    return (
        sfn.Choice(s, "Recorded by whom?")
        .when(sfn.Condition.string_equals(source, MANUAL_SOURCE), then)
        .when(
            sfn.Condition.string_equals(source, PLANNED_SOURCE),
            read("Read planned marker", PLANNED_PK),
        )
        .otherwise(read("Read classifier marker", CLASSIFIED_PK))
    )


def _as_recorded() -> sfn.Condition:
    """Every field of the decision as its marker holds it, and the execution named by its
    id: a genuine decision cannot be replayed, nor a recorded one altered."""
    flags = [_absent_or_equal(name, "BOOL") for name in FLAGS]
    optional = [_absent_or_equal(name, "S") for name in OPTIONAL_TEXTS]
    return sfn.Condition.and_(
        sfn.Condition.string_equals_json_path(
            state.decision("decision_id"), f"{state.RECORDED_AS}.name"
        ),
        *[
            sfn.Condition.and_(
                sfn.Condition.is_string(state.recorded(f"{name}.S")),
                sfn.Condition.string_equals_json_path(
                    state.decision(name), state.recorded(f"{name}.S")
                ),
            )
            for name in TEXTS
        ],
        *[
            sfn.Condition.number_equals_json_path(
                state.decision(name), f"{state.RECORDED_AS}.{name}"
            )
            for name in NUMBERS
        ],
        *flags,
        *optional,
    )


def _absent_or_equal(name: str, kind: str) -> sfn.Condition:
    """A field only some decisions have: on neither side, or of the same ``kind`` (``BOOL``,
    ``S``) and equal on both."""
    typed, equal = {
        "BOOL": (sfn.Condition.is_boolean, sfn.Condition.boolean_equals_json_path),
        "S": (sfn.Condition.is_string, sfn.Condition.string_equals_json_path),
    }[kind]
    return sfn.Condition.or_(
        sfn.Condition.and_(
            sfn.Condition.is_not_present(state.recorded(name)),
            sfn.Condition.is_not_present(state.decision(name)),
        ),
        sfn.Condition.and_(
            typed(state.recorded(f"{name}.{kind}")),
            typed(state.decision(name)),
            equal(state.decision(name), state.recorded(f"{name}.{kind}")),
        ),
    )
