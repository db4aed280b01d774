"""The report, where every remediation that did not fail ends: the jobs it drained resumed
(``resume``), how long it took, the ``Remediations`` and ``RemediationSeconds`` metrics,
the mail, the closed ledger record; then the breaker slot and the node lock are given back
(``release``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.metrics import METRICS_NAMESPACE, REMEDIATION_SECONDS_METRIC
from nodemedic.remediate import fleet
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import (
    NOW,
    dynamo_json,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    formatted,
    text_at,
)
from stacks.remediation.kit.signals import metrics, notify, remediations
from stacks.remediation.phases import hyperpod
from stacks.remediation.phases.resume import resume_jobs


def report(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """The jobs resumed, the outcome published, mailed and recorded; then ``then``, the
    release."""
    elapsed = flow.elapsed("Elapsed", text_at(state.STARTED_AT), NOW, state.ELAPSED)
    # Who repaired the node, where another substrate than Auto Scaling may have.
    substrate = {"substrate": state.SUBSTRATE} if flow.settings.other_substrates else {}
    outcome = sfn.JsonPath.string_at(state.OUTCOME_NAME)
    published = metrics(
        flow,
        "Publish outcome metrics",
        METRICS_NAMESPACE,
        [
            {
                "name": REMEDIATION_SECONDS_METRIC,
                "value": sfn.JsonPath.number_at(state.ELAPSED_SECONDS),
                "unit": "Seconds",
            },
            remediations(outcome),
        ],
    )
    mailed = notify(
        flow,
        "Notify outcome",
        formatted("nodemedic {}: {}", state.OUTCOME_NAME, state.INSTANCE_ID),
        {
            "outcome": outcome,
            "action": sfn.JsonPath.string_at(state.ACTION),
            # No node name: a notify-only decision never looks the node up (the
            # message's "node" field has it when known).
            "summary": formatted(
                "{}: {} on {} (group {}) after {} s; {}",
                state.OUTCOME_NAME,
                state.FAULT_ID,
                state.INSTANCE_ID,
                state.GROUP_NAME,
                state.ELAPSED_SECONDS,
                state.REASON,
            ),
            "reason": sfn.JsonPath.string_at(state.REASON),
            "escalation": sfn.JsonPath.object_at(state.ESCALATION),
            "seconds": sfn.JsonPath.number_at(state.ELAPSED_SECONDS),
            **{name: sfn.JsonPath.string_at(path) for name, path in substrate.items()},
        },
    )
    close = flow.guard(
        flow.record(
            "Close ledger",
            record_state="closed",
            values={
                "outcome": dynamo_text(state.OUTCOME_NAME),
                "reason": dynamo_text(state.REASON),
                "node": dynamo_text(state.NODE_NAME),
                "node_group": dynamo_text(state.GROUP_NAME),
                "actions": dynamo_json(state.TIMES),
                "seconds": dynamo_number(state.ELAPSED_SECONDS),
                "ended_at": dynamo_now(),
                **{name: dynamo_text(path) for name, path in substrate.items()},
            },
        )
    )
    # A node held for a fleet event is in the event's one mail (``fleet``), not its own.
    elapsed.next(published).next(
        sfn.Choice(flow.scope, "Mail outcome?")
        .when(sfn.Condition.string_equals(state.OUTCOME_NAME, fleet.OUTCOME), close)
        .otherwise(mailed)
    )
    mailed.next(close).next(then)
    return resume_jobs(flow, elapsed, deferred=hyperpod.listed(flow))
