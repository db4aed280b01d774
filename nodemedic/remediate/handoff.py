"""Hand-off: a node nodemedic holds, parked outside its control while a vendor has it.

Only a node whose remediation left it out of service can be handed off: its lock parked
(``nodemedic.remediate.parking``: a failure, a denial, a request left unanswered that
holds). ``HAND_OFF`` takes the lock's lease away, so the lock never frees itself: no
decision takes the node (a new one is a duplicate), the breaker's sweep never drops it, and
the reconcile, which renews parked leases, leaves a handed-off lock alone. The node stays
cordoned, tainted and counted on its group's breaker (``parking.COUNT``) but not on the
cluster's (``parking.UNCOUNT``: capacity lost is no remediation in flight),
and its ledger record (source ``handoff``) says to whom, under which ticket, and who handed
it off. ``TAKE_BACK`` gives the lock a parked lease again: the node is back where the
hand-off found it, counted while it carries nodemedic's taint, free once a person takes
the taint off (or the Node is gone).
"""

from __future__ import annotations

from typing import Final

from nodemedic.remediate.expressions import assign, every, missing, present, remove, update
from nodemedic.remediate.ledger import EXPIRES_AT
from nodemedic.remediate.parking import PARKED

SOURCE: Final = "handoff"
"""The ``source`` of a hand-off's ledger record, whose ``requested_by`` handed it off."""
HANDED_OFF_AT: Final = "handed_off_at"
HANDED_OFF_TO: Final = "handed_off_to"
TICKET: Final = "ticket"
HANDED_OFF_BY: Final = "handed_off_by"
HANDOFF_RECORD: Final = "handoff_record"
"""On the lock: the sort key of the hand-off's ledger record, which the take-back closes."""
HANDED_OFF_STATE: Final = "handed_off"
TAKEN_BACK_STATE: Final = "taken_back"

HANDED_OFF: Final = present(HANDED_OFF_AT)
HANDABLE: Final = every(PARKED, missing(HANDED_OFF_AT))
"""The lock is a remediation's that left the node out of service, not handed off yet."""
HAND_OFF: Final = update(
    assign(HANDED_OFF_AT, ":now"),
    assign(HANDED_OFF_TO, ":to"),
    assign(TICKET, ":ticket"),
    assign(HANDED_OFF_BY, ":by"),
    assign(HANDOFF_RECORD, ":record"),
    remove(EXPIRES_AT),
)
TAKE_BACK: Final = update(
    assign(EXPIRES_AT, ":until"),
    remove(HANDED_OFF_AT),
    remove(HANDED_OFF_TO),
    remove(TICKET),
    remove(HANDED_OFF_BY),
    remove(HANDOFF_RECORD),
)
"""Under ``HANDED_OFF``; ``:until`` a parked lease from now (``parking.LEASE_SECONDS``)."""


def record_id(instance_id: str, at: int) -> str:
    """The hand-off's id, its ledger record's ``decision_id``: the node and when."""
    return f"{instance_id}-{SOURCE}-{at}"
