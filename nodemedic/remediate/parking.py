"""The ledger's rules for a remediation that failed after its node was taken out of service:
the node stays locked, and counted by its group's breaker, while it carries nodemedic's
taint.

A failed (or stopped) remediation that was admitted may have cordoned, tainted and half
drained its node. Giving its breaker slot back would let the breaker take another node of
the group out while this one still is; giving its lock back would let the next decision
start over on a node in an unknown state. So the failure *parks* the lock instead of
deleting it: ``failed_at`` marks it and its expiry becomes a lease of ``LEASE_SECONDS``.
The reconcile (every ``RECONCILE_SECONDS``) renews the lease of each parked node that still
carries the taint and counts it on its breaker again (a node a person's decision holds out,
``HELD_OUT``, on its group's breaker alone). Once a person takes the taint off (the
node is fixed) or the Node is gone, nothing renews the lease: within ``LEASE_SECONDS`` the
lock is free (``ledger.LOCK_FREE``), the breaker's sweep drops the holder (``ledger.STALE``)
and a new decision may take the node.
"""

from __future__ import annotations

from typing import Final

from nodemedic.remediate.approval import DENIED_ERROR, TIMEOUT_ERROR
from nodemedic.remediate.expressions import add_members, assign, delete_members, present, update
from nodemedic.remediate.ledger import EXPIRES_AT, HOLDERS

RECONCILE_SECONDS: Final = 300
"""How often the reconcile looks for nodes nodemedic took out with no live remediation."""
LEASE_SECONDS: Final = 3 * RECONCILE_SECONDS
"""A parked lock's lease: two missed reconciles in a row do not free a node still out."""
FAILED_AT: Final = "failed_at"

HELD_OUT: Final = "held_out"
"""On a parked lock: why a person's decision holds the node out (``HELD_OUT_ERRORS``)."""
HELD_OUT_ERRORS: Final = (DENIED_ERROR, TIMEOUT_ERROR)
"""The failures that are a person's decision, not a remediation gone wrong: a denial, and an
approval request left unanswered where that holds. The node they leave out is capacity lost
while a person decides, counted on its group's breaker (its capacity) but not on the
cluster's: ``max_in_flight`` counts remediations, and a cluster whose people deny ten
repairs must still repair the eleventh fault. The reconcile counts these nodes, and the
handed-off ones, as ``HELD_OUT_METRIC``."""

PARKED: Final = present(FAILED_AT)
"""The lock is a failed remediation's, parked: no remediation is live on the node."""
_PARKING: Final = (
    assign(FAILED_AT, ":now"),
    assign("failed_step", ":step"),
    assign("node_group", ":group"),
    assign(EXPIRES_AT, ":until"),
)
PARK: Final = update(*_PARKING)
"""What the failure leaves on its lock, under ``ledger.LOCK_HELD_BY``: only its own lock is
parked, never one a later decision took over. ``node_group`` names the breaker to count the
node on (``COUNT``) when the reconcile renews the lease."""
PARK_HELD_OUT: Final = update(*_PARKING, assign(HELD_OUT, ":why"))
"""``PARK`` for a failure of ``HELD_OUT_ERRORS``, which ``:why`` names."""
RENEW: Final = update(assign(EXPIRES_AT, ":until"))
"""The reconcile's renewal of the lease, under ``PARKED``."""
COUNT: Final = update(add_members(HOLDERS, ":holder"))
"""The parked node on its group's breaker, with the park and with every renewal: kept, or
counted again if a sweep dropped it while the lease had run out."""
UNCOUNT: Final = update(delete_members(HOLDERS, ":holder"))
"""A node held out by a person's decision (``HELD_OUT``, or handed off) off the cluster's
breaker: whatever counted it there, the park, its remediation's slot or a renewal of old."""
