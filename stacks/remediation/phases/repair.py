"""Reset, reboot or replace, as the plan says: the drained node's repair, whose ways all
end in the report. A GPU reset (``gpu_reset`` on) that does not heal the GPU falls back to
the reboot (``reset``); a reboot that does not heal the node escalates to the replacement
(``reboot``); a replacement takes a spare first where its group keeps them (``replace``). A
planned decision whose instance cannot be replaced (a Capacity Block's end,
``nodemedic.remediate.planned``) ends drained: AWS takes the instance, cordoned and empty."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.phases.reboot import reboot
from stacks.remediation.phases.replace import replace
from stacks.remediation.phases.reset import reset

DRAINED = "drained"
"""The outcome of a planned remediation whose instance AWS takes and nothing replaces."""


def reboot_or_replace(
    flow: Flow, *, report: sfn.IChainable, failure: sfn.IChainable
) -> sfn.IChainable:
    replaced = replace(flow, report=report, failure=failure)
    rebooted = reboot(flow, report=report, replace=replaced, failure=failure)
    replaceable = state.decision("replaceable")
    drained = flow.ended("Drained, left to AWS", DRAINED)
    drained.next(report)
    choice = sfn.Choice(flow.scope, "Reboot or replace?").when(
        sfn.Condition.and_(
            sfn.Condition.is_boolean(replaceable),
            sfn.Condition.boolean_equals(replaceable, False),
        ),
        drained,
    )
    if flow.settings.reserved_capacity:
        choice.when(
            sfn.Condition.and_(
                sfn.Condition.string_equals(state.ACTION, "replace"),
                sfn.Condition.boolean_equals(state.plan("hand_off"), True),
            ),
            flow.found_error(
                "Handed off",
                "ReservedCapacity",
                "a replacement of {} would give up its reserved capacity: it stays cordoned "
                "and drained for a support case (reserved_capacity)",
                state.INSTANCE_ID,
            ).next(failure),
        )
    if flow.settings.gpu_reset:
        # Only a cluster that resets GPUs has a plan that says reset.
        choice.when(
            sfn.Condition.string_equals(state.ACTION, "reset"),
            reset(flow, report=report, reboot=rebooted, failure=failure),
        )
    return choice.when(sfn.Condition.string_equals(state.ACTION, "reboot"), rebooted).otherwise(
        replaced
    )
