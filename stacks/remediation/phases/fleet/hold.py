"""Holding a node for a fleet event: given back marked, and reported with the outcome
``fleet`` (``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.stack import FLEET_HELD_STATE
from nodemedic.remediate import fleet
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import formatted, text_at
from stacks.remediation.phases.mark import marking


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
