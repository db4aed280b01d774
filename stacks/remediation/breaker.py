"""The breaker: admit this remediation into its node group's slots, or hold it.

``"Admit"`` is one conditional update of the group's holder set (``ledger.ADMISSIBLE``,
``ledger.ADMIT``). While the group is at its limit the decision is reported held once, then
waits and tries again, up to ``breaker_hold``; every ``ledger.SWEEP_SECONDS`` the wait also
sweeps stale holders (``stacks.remediation.sweep``), so the breaker cannot latch shut.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts import BREAKER_METRIC, METRICS_NAMESPACE
from nodemedic.remediate import ledger, policy
from stacks.remediation import state
from stacks.remediation.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.render import (
    breaker_key,
    dynamo_instance_set,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    entered_at,
    formatted,
)
from stacks.remediation.signals import in_remediation, metrics, notify
from stacks.remediation.sweep import sweep


def admit(flow: Flow, *, report: sfn.IChainable, admitted: sfn.IChainable) -> sfn.IChainable:
    """Take a slot, publish the group's count, go on to ``admitted``; a decision held too
    long goes to the ``report`` as held."""
    s = flow.scope
    take = flow.write(
        "Admit",
        breaker_key(),
        ledger.ADMIT,
        {
            ":me": dynamo_instance_set(),
            ":instance": dynamo_text(state.INSTANCE_ID),
            ":now": dynamo_now(),
            ":limit": dynamo_number(state.LIMIT),
        },
        condition=ledger.ADMISSIBLE,
        return_values=tasks.DynamoReturnValues.ALL_NEW,
        result_selector={
            **entered_at(),
            "holders": sfn.JsonPath.array_length(
                sfn.JsonPath.list_at(f"$.Attributes.{ledger.HOLDERS}.SS")
            ),
        },
        result_path=state.SLOT,
    )
    held_before = sfn.Choice(s, "Held before?")
    take.add_catch(held_before, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    flow.guard(take)
    expired = sfn.Choice(s, "Hold expired?")
    held_before.when(sfn.Condition.boolean_equals(state.HELD, True), expired).otherwise(
        _report_held(flow).next(expired)
    )
    st = flow.settings
    hold_wait = sfn.Wait(s, "Hold", time=flow.poll)
    expired.when(
        sfn.Condition.number_greater_than_equals(
            state.HOLD_ROUNDS, policy.rounds(st.breaker_hold, st.poll_seconds)
        ),
        flow.ended("Held too long", "held").next(report),
    ).otherwise(hold_wait)
    hold_wait.next(
        flow.next_round(
            "Count hold", state.HOLD, held=True, sweep_at=sfn.JsonPath.number_at(state.SWEEP_AT)
        )
    ).next(
        sfn.Choice(s, "Sweep due?")
        .when(
            sfn.Condition.number_greater_than_equals_json_path(state.HOLD_ROUNDS, state.SWEEP_AT),
            sweep(flow, then=take),
        )
        .otherwise(take)
    )
    take.next(in_remediation(flow, "Publish nodes in remediation", state.SLOT_HOLDERS)).next(
        admitted
    )
    return take


def _report_held(flow: Flow) -> sfn.Chain:
    """The first time the breaker holds this decision: ledger, mail and ``BreakerHeld``."""
    st = flow.settings
    return (
        flow.guard(flow.record("Record held", record_state="held"))
        .next(
            notify(
                flow,
                "Notify held",
                formatted("nodemedic held: {}", state.INSTANCE_ID),
                {
                    "outcome": "held",
                    "action": sfn.JsonPath.string_at(state.ACTION),
                    "summary": formatted(
                        "breaker open: {} of the {} nodes of group {} are in remediation "
                        "(max_parallel {}, max_unhealthy_percent {}); this decision "
                        "waits for a slot up to {} s",
                        state.LIMIT,
                        state.GROUP_SIZE,
                        state.GROUP_NAME,
                        str(st.max_parallel),
                        str(st.max_unhealthy_percent),
                        str(st.breaker_hold),
                    ),
                },
            )
        )
        .next(
            metrics(
                flow,
                "Publish held metric",
                METRICS_NAMESPACE,
                [{"name": BREAKER_METRIC, "value": 1, "unit": "Count"}],
            )
        )
    )
