"""A failed remediation's parked lock (nodemedic/remediate/parking.py) on an in-memory
ledger: the node stays locked and counted by its breaker while the reconcile renews the
lease, and both are given back once nothing does."""

from __future__ import annotations

from nodemedic.remediate import ledger, parking
from tests.support.ledger import MemoryLedger

NOW = 1_800_000_000
"""Epoch seconds."""
AT = "2026-11-22T18:30:00Z"
NODE, OTHER = "i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"
GROUP = "p5"
LEASE = parking.LEASE_SECONDS


def failed_in_drain() -> MemoryLedger:
    """A remediation of NODE admitted into GROUP's one slot, then failed while draining."""
    table = MemoryLedger()
    assert table.take_lock(NODE, "failed", "xid-79", NOW, NOW + 16_690)
    assert table.admit(GROUP, NODE, 1, AT)
    assert table.park(GROUP, NODE, "failed", step="draining", now=AT, until=NOW + LEASE)
    return table


def test_a_parked_node_stays_locked_and_counted_while_its_lease_runs() -> None:
    table = failed_in_drain()

    lock = table.item((NODE, "inflight"))
    assert (lock["failed_at"], lock["failed_step"], lock["node_group"]) == (AT, "draining", GROUP)
    assert table.holders(GROUP) == 1
    table.sweep(GROUP, NOW + LEASE)
    assert table.holders(GROUP) == 1, "a parked node is no stale holder"
    assert not table.admit(GROUP, OTHER, 1, AT), "its slot is not given to another node"
    assert not table.take_lock(NODE, "next", "xid-79", NOW + LEASE, NOW + 2 * LEASE)


def test_the_lease_runs_out_once_nothing_renews_it() -> None:
    table = failed_in_drain()

    table.sweep(GROUP, NOW + LEASE + 1)

    assert table.holders(GROUP) == 0
    assert table.admit(GROUP, OTHER, 1, AT)
    assert table.take_lock(NODE, "next", "xid-79", NOW + LEASE + 1, NOW + 2 * LEASE)
    assert parking.FAILED_AT not in table.item((NODE, "inflight")), "a new lock, not parked"


def test_a_renewal_keeps_the_node_out_and_counts_it_again() -> None:
    table = failed_in_drain()
    table.sweep(GROUP, NOW + LEASE + 1)  # the reconcile was late: the slot was swept

    assert table.renew(NODE, NOW + LEASE + 1 + LEASE)

    assert table.holders(GROUP) == 1
    table.sweep(GROUP, NOW + 2 * LEASE)
    assert table.holders(GROUP) == 1
    assert not table.take_lock(NODE, "next", "xid-79", NOW + 2 * LEASE, NOW + 3 * LEASE)


def test_only_a_parked_lock_is_renewed() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "live", "xid-79", NOW, NOW + 900)
    table.admit(GROUP, NODE, 1, AT)

    assert not table.renew(NODE, NOW + 10 * LEASE), "a live remediation's lock is its own"
    assert not table.renew(OTHER, NOW + LEASE), "no lock, nothing to renew"
    assert table.item((NODE, "inflight"))[ledger.EXPIRES_AT] == NOW + 900
    assert table.holders(GROUP) == 1


def test_a_failure_parks_only_its_own_lock() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "stopped", "xid-79", NOW, NOW + 900)
    # Its lock expired, and a new decision took the node over.
    table.take_lock(NODE, "next", "xid-79", NOW + 901, NOW + 1801)

    assert not table.park(GROUP, NODE, "stopped", step="draining", now=AT, until=NOW + 901 + LEASE)

    assert parking.FAILED_AT not in table.item((NODE, "inflight"))
    assert table.holders(GROUP) == 0, "nothing of the transaction is applied"
