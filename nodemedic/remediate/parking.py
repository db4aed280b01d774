"""The ledger's rules for a remediation that failed after its node was taken out of service:
the node stays locked, and counted by its group's breaker, while it carries nodemedic's
taint.

A failed (or stopped) remediation that was admitted may have cordoned, tainted and half
drained its node. Giving its breaker slot back would let the breaker take another node of
the group out while this one still is; giving its lock back would let the next decision
start over on a node in an unknown state. So the failure *parks* the lock instead of
deleting it: ``failed_at`` marks it and its expiry becomes a lease of ``LEASE_SECONDS``.
The reconcile (every ``RECONCILE_SECONDS``) renews the lease of each parked node that still
carries the taint and counts it on its breaker again. Once a person takes the taint off (the
node is fixed) or the Node is gone, nothing renews the lease: within ``LEASE_SECONDS`` the
lock is free (``ledger.LOCK_FREE``), the breaker's sweep drops the holder (``ledger.STALE``)
and a new decision may take the node.
"""

from __future__ import annotations

from typing import Final

from nodemedic.remediate.expressions import add_members, assign, present, update
from nodemedic.remediate.ledger import EXPIRES_AT, HOLDERS

RECONCILE_SECONDS: Final = 300
"""How often the reconcile looks for nodes nodemedic took out with no live remediation."""
LEASE_SECONDS: Final = 3 * RECONCILE_SECONDS
"""A parked lock's lease: two missed reconciles in a row do not free a node still out."""
FAILED_AT: Final = "failed_at"

PARKED: Final = present(FAILED_AT)
"""The lock is a failed remediation's, parked: no remediation is live on the node."""
PARK: Final = update(
    assign(FAILED_AT, ":now"),
    assign("failed_step", ":step"),
    assign("node_group", ":group"),
    assign(EXPIRES_AT, ":until"),
)
"""What the failure leaves on its lock, under ``ledger.LOCK_HELD_BY``: only its own lock is
parked, never one a later decision took over. ``node_group`` names the breaker to count the
node on (``COUNT``) when the reconcile renews the lease."""
RENEW: Final = update(assign(EXPIRES_AT, ":until"))
"""The reconcile's renewal of the lease, under ``PARKED``."""
COUNT: Final = update(add_members(HOLDERS, ":holder"))
"""The parked node on its group's breaker, with the park and with every renewal: kept, or
counted again if a sweep dropped it while the lease had run out."""
