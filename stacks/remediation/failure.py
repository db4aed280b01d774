"""The failure phase, where every unexpected error and every failure a Choice finds ends:
the ledger says where it stopped, the slot and lock are given back, SNS and the
``Remediations`` metric say so, and the execution fails as ``"Remediation failed"``.

Every step here is best effort: one that fails leaves its error beside the state and the
next one still runs.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts import METRICS_NAMESPACE
from stacks.remediation import state
from stacks.remediation.flow import Flow
from stacks.remediation.release import release
from stacks.remediation.render import dynamo_json, dynamo_now, dynamo_text, formatted
from stacks.remediation.signals import metrics, notify, remediations


def failure(flow: Flow) -> sfn.IChainable:
    record = flow.record(
        "Record failure",
        record_state="failed",
        values={
            "failed_step": dynamo_text(state.STEP_NAME),
            "error": dynamo_json(state.ERROR),
            "ended_at": dynamo_now(),
        },
    )
    mailed = notify(
        flow,
        "Notify failure",
        formatted("nodemedic failed: {}", state.INSTANCE_ID),
        {
            "outcome": "failed",
            "summary": formatted(
                "remediation of {} ({}) stopped at {}: {}",
                state.INSTANCE_ID,
                state.FAULT_ID,
                state.STEP_NAME,
                state.ERROR_NAME,
            ),
            "stopped_at": sfn.JsonPath.string_at(state.STEP_NAME),
            "error": sfn.JsonPath.object_at(state.ERROR),
        },
        guard=False,
    )
    metric = metrics(
        flow, "Publish failure metric", METRICS_NAMESPACE, [remediations("failed")], guard=False
    )
    fail = sfn.Fail(
        flow.scope,
        "Remediation failed",
        error="RemediationFailed",
        cause="a remediation step failed; the ledger item and the SNS message say which",
    )
    releases = release(flow, "Failed: ", mailed, best_effort=True)
    record.add_catch(releases, result_path=state.RECORD_ERROR)
    mailed.add_catch(metric, result_path=state.NOTIFY_ERROR)
    metric.add_catch(fail, result_path=state.METRIC_ERROR)
    record.next(releases)
    mailed.next(metric).next(fail)
    return record
