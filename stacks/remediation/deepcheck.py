"""The deep check's verdicts: a decision of the deep check's stream that is no remediation.

A node registers behind the health-check taint and waits for its deep check. A passed
verdict (``DEEP_CHECK_PASSED_FAULT``) admits the node through the kube ``deep_check`` op and
ends the execution: no lock, no breaker, no ledger record and no mail, since every healthy
node of a scale-up passes. A failed one (``DEEP_CHECK_FAILED_FAULT``, action replace)
labels the node ``Failed`` and goes on as any replace decision, through the plan, the lock
and the breaker; one whose origin was not proven arrives capped to notify and labels
nothing. Any other decision, ``NothingChecked`` included (notified, the node stays tainted),
goes straight on.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts import DEEP_CHECK_FAILED_FAULT, DEEP_CHECK_PASSED_FAULT, DEEP_CHECK_SOURCE
from stacks.remediation import state
from stacks.remediation.flow import Flow

VERDICT: Final = "$.deep_check"
"""The kube ``deep_check`` op's answer: ``{node, changed}``."""


def verdict(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Where a decision of the deep check's stream turns off the flow; others go to ``then``."""
    s = flow.scope

    def label(id: str, value: str) -> sfn.TaskStateBase:
        # Unguarded: the decision is not recorded yet, so there is nothing for the failure
        # phase to close; each label says below what its error does.
        return flow.kube(
            id,
            "deep_check",
            {
                "instance_id": sfn.JsonPath.string_at(state.INSTANCE_ID),
                "verdict": value,
            },
            result_path=VERDICT,
            guard=False,
        )

    admit = label("Admit checked node", "Passed")
    # The node stays behind its taint: the failed execution is what people see.
    admit.add_catch(sfn.Fail(s, "Admission failed", error="DeepCheckAdmissionFailed"))
    admitted = admit.next(
        sfn.Succeed(s, "Admitted", comment="the deep check passed", output_path=VERDICT)
    )
    failed = label("Label deep check failed", "Failed")
    # The label only tells people; a node that failed its check is replaced without it.
    failed.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    failed.next(then)
    from_deep_check = sfn.Condition.string_equals(state.decision("source"), DEEP_CHECK_SOURCE)
    return (
        sfn.Choice(s, "Deep check verdict?")
        .when(
            sfn.Condition.and_(
                from_deep_check,
                sfn.Condition.string_equals(state.FAULT_ID, DEEP_CHECK_PASSED_FAULT),
            ),
            admitted,
        )
        .when(
            sfn.Condition.and_(
                from_deep_check,
                sfn.Condition.string_equals(state.FAULT_ID, DEEP_CHECK_FAILED_FAULT),
                sfn.Condition.string_equals(state.decision("action"), "replace"),
            ),
            failed,
        )
        .otherwise(then)
    )
