"""The deep checks overdue: at every reconcile, the nodes that waited behind the
health-check taint longer than ``deep_check_timeout`` without a verdict (the kube Lambda's
``overdue_deep_checks`` op, ``lambdas.kube.gate``), told once per wait in one mail.

No verdict is no proof of health, and replacing the node would replace every node of a
cluster whose agents lack ``--deep-check-at-start``: a new node stays tainted, and people
decide. A node a reboot held is given back instead (``Unchecked``): its reboot cleared the
fault, and with the default image's missing tools its check may find nothing to run.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.signals import tell_new

OVERDUE: Final = "$.overdue"
"""The kube ``overdue_deep_checks`` op's answer:
``{count, nodes, left_out, new: {count, message}}``."""


def tell_overdue(flow: Flow, done: sfn.IChainable) -> sfn.IChainable:
    """List the overdue nodes, mail the ones not told yet, go on to ``done``. A failure
    fails the reconcile run, as the silence's does: a wait nobody heard of must show."""
    listed = flow.kube(
        "List overdue deep checks",
        "overdue_deep_checks",
        {"timeout_seconds": flow.settings.deep_check_timeout},
        result_path=OVERDUE,
        guard=False,
    )
    listed.next(tell_new(flow, "overdue", "deep checks overdue", OVERDUE, done))
    return listed
