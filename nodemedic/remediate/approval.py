"""Approval: a drained node waits for a person before the irreversible step.

Where the ``approval`` of the cluster, or of the node's group, asks for it (the plan says
so: ``Plan.approval``), the remediation mails a request (the fault, its evidence, the last
reboot for it, the planned action) and waits on a Step Functions task token that it keeps
on the decision's ledger record (``nodemedic.contracts.ledger.APPROVAL_TOKEN``).
``nodemedic approve|deny`` finds the token there and answers with ``answer``: the caller's
identity and reason, which the flow records. A denial, and an unanswered request whose
``approval_timeout_default`` is ``hold``, end as a failure does (``ApprovalDenied``,
``ApprovalTimeout``): the node stays cordoned, drained and counted by the breaker
(``nodemedic.remediate.parking``) until a person gives it back or hands it off.
"""

from __future__ import annotations

from typing import Final

AWAITING: Final = "awaiting_approval"
"""The record's state while it waits; the step a denial or a hold says it stopped at."""
APPROVED: Final = "approved"
DENIED: Final = "denied"
TIMED_OUT: Final = "approval_timed_out"
DENIED_ERROR: Final = "ApprovalDenied"
"""The error ``SendTaskFailure`` answers a denial with; its cause is ``answer`` as JSON."""
TIMEOUT_ERROR: Final = "ApprovalTimeout"
"""What a request left unanswered for ``approval_timeout`` fails with, where it holds."""
TIMED_OUT_BY: Final = "approval_timeout"
"""Who approved a request left unanswered where ``approval_timeout_default`` proceeds."""


def asks(approval: str, action: str, *, replaceable: bool = True) -> bool:
    """Whether an ``approval`` setting (the cluster's, or the node group's own) asks a
    person before ``action``. A planned replacement of an instance AWS ends anyway
    (``replaceable`` false) only drains it: ``replace`` has nothing irreversible to ask
    about there."""
    return approval == "any" or (approval == "replace" and action == "replace" and replaceable)


def answer(by: str, reason: str) -> dict[str, str]:
    """What ``SendTaskSuccess`` (as its output) and ``SendTaskFailure`` (as its cause)
    carry: who answered, the caller's STS identity, and why."""
    return {"by": by, "reason": reason}
