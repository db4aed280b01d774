"""The fleet judgement: drained, right before reboot or replace, the window settles and is
judged (``stacks.remediation.phases.fleet``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.phases.fleet.window import judged


def judge(flow: Flow, *, declare: sfn.IChainable, then: sfn.IChainable) -> sfn.IChainable:
    """Right before reboot or replace: wait for the window to settle, then ``then``, or
    ``declare`` the fleet event."""
    settle = sfn.Wait(flow.scope, "Fleet settle", time=sfn.WaitTime.seconds_path(state.JUDGED_WAIT))
    return judged(flow, "", settle=settle, declare=declare, then=then)
