"""The ledger's rules (nodemedic/remediate/ledger.py) on an in-memory ledger: the node lock,
the breaker, the sweep and escalation, evaluated from the same expressions the state
machine's tasks send. No AWS, no apiserver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodemedic.remediate import ledger
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.expressions import compare, either, every, missing, present
from nodemedic.remediate.ledger import admission_limit
from tests.support.ledger import MemoryLedger

NOW = 1_800_000_000
"""Epoch seconds."""
AT = "2026-11-22T18:30:00Z"
NODE, OTHER = "i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"


def blocked(in_flight: int, size: int, pct: int, max_parallel: int) -> bool:
    """The breaker rule as the issue states it."""
    return in_flight * 100 > pct * size or in_flight >= max_parallel


@pytest.mark.parametrize("size", [0, 1, 2, 4, 5, 9, 10, 11, 50, 1000])
@pytest.mark.parametrize("pct", [0, 10, 20, 33, 50, 100])
@pytest.mark.parametrize("max_parallel", [1, 2, 5])
def test_admission_limit_admits_exactly_when_the_breaker_rule_allows(
    size: int, pct: int, max_parallel: int
) -> None:
    limit = admission_limit(size, pct, max_parallel)
    for in_flight in range(size + max_parallel + 2):
        admitted = in_flight < limit
        if in_flight == 0:
            # An empty group never blocks: one node at a time can always heal.
            assert admitted
        else:
            assert admitted == (not blocked(in_flight, size, pct, max_parallel)), in_flight


def test_admission_limit_for_the_documented_examples() -> None:
    assert admission_limit(10, 20, 2) == 2  # max_parallel binds
    assert admission_limit(4, 20, 2) == 1  # one in flight is already 25 % of four
    assert admission_limit(100, 20, 50) == 21  # 20 in flight is 20 %, not more


@pytest.mark.parametrize(("size", "pct", "parallel"), [(-1, 20, 2), (4, 101, 2), (4, 20, 0)])
def test_admission_limit_rejects_impossible_settings(size: int, pct: int, parallel: int) -> None:
    with pytest.raises(PolicyError):
        admission_limit(size, pct, parallel)


# The node lock ------------------------------------------------------------------------------


def test_one_remediation_holds_a_node_until_it_releases_it() -> None:
    table = MemoryLedger()

    assert table.take_lock(NODE, "first", "xid-79", NOW, NOW + 900)
    assert not table.take_lock(NODE, "second", "xid-48", NOW + 1, NOW + 901)
    assert table.take_lock(OTHER, "other", "xid-79", NOW, NOW + 900), "locks are per node"
    assert not table.release_lock(NODE, "second"), "only its holder releases a lock"
    assert table.release_lock(NODE, "first")
    assert table.take_lock(NODE, "second", "xid-48", NOW + 2, NOW + 902)


def test_an_expired_lock_is_taken_over() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "stopped", "xid-79", NOW, NOW + 900)

    assert not table.take_lock(NODE, "next", "xid-79", NOW + 900, NOW + 1800), "not yet"
    assert table.take_lock(NODE, "next", "xid-79", NOW + 901, NOW + 1801)
    assert table.item((NODE, "inflight"))["decision_id"] == "next"


# Escalation -----------------------------------------------------------------------------------


def test_a_fault_seen_again_after_the_reboot_flags_the_remediation_in_flight() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "first", "xid-48", NOW, NOW + 900)
    assert not table.flag_recurrence(NODE, "second", "xid-48", AT), "not rebooted yet"
    table.note_reboot(NODE, AT)

    assert not table.flag_recurrence(NODE, "second", "xid-79", AT), "another fault"
    assert not table.flag_recurrence(NODE, "first", "xid-48", AT), "its own decision"
    assert not table.recurred(NODE)
    assert table.flag_recurrence(NODE, "second", "xid-48", AT)
    assert table.recurred(NODE)
    assert table.item((NODE, "inflight"))["recurred_by"] == "second"


def test_a_flag_needs_a_lock_to_land_on() -> None:
    assert not MemoryLedger().flag_recurrence(NODE, "second", "xid-48", AT)


def test_a_replacement_decided_before_the_reboot_upgrades_the_remediation_instead() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "first", "xid-48", NOW, NOW + 900, action="reboot")

    assert not table.flag_upgrade(NODE, "weaker", "reboot", "xid-48", AT), "not stronger"
    assert table.flag_upgrade(NODE, "second", "replace", "xid-79", AT)
    assert not table.flag_upgrade(NODE, "third", "replace", "xid-79", AT), "upgraded once"
    assert not table.note_reboot(NODE, AT), "a node to be replaced is not rebooted"

    lock = table.item((NODE, "inflight"))
    assert (lock["upgraded_by"], lock["upgrade_fault"]) == ("second", "xid-79")
    assert ledger.REBOOTED_AT not in lock


def test_a_flag_after_the_reboot_stops_the_node_from_being_given_back() -> None:
    for flag in ("upgrade", "recurrence"):
        table = MemoryLedger()
        table.take_lock(NODE, "first", "xid-48", NOW, NOW + 900, action="reboot")
        assert table.note_reboot(NODE, AT)

        if flag == "upgrade":
            assert table.flag_upgrade(NODE, "second", "replace", "xid-79", AT)
        else:
            assert table.flag_recurrence(NODE, "second", "xid-48", AT)

        assert not table.give_back(NODE, AT), flag


def test_a_node_being_given_back_takes_no_flag_any_more() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "first", "xid-48", NOW, NOW + 900, action="reboot")
    table.note_reboot(NODE, AT)

    assert table.give_back(NODE, AT)

    assert not table.flag_upgrade(NODE, "second", "replace", "xid-79", AT)
    assert not table.flag_recurrence(NODE, "second", "xid-48", AT)


def test_nothing_upgrades_a_replacement_in_flight() -> None:
    table = MemoryLedger()
    table.take_lock(NODE, "first", "xid-79", NOW, NOW + 900, action="replace")
    before = table.item((NODE, "inflight"))

    assert not table.flag_upgrade(NODE, "weaker", "reboot", "xid-48", AT)
    assert not table.flag_recurrence(NODE, "weaker", "xid-48", AT)
    assert not table.flag_upgrade(NODE, "equal", "replace", "neuron-dma-error", AT)
    assert table.item((NODE, "inflight")) == before


def test_a_reboot_escalates_within_the_window_only() -> None:
    now = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
    assert ledger.reboot_escalates(now - timedelta(seconds=1800), now, 3600) == 1800
    assert ledger.reboot_escalates(now - timedelta(seconds=3600), now, 3600) is None
    assert ledger.reboot_escalates(None, now, 3600) is None


# The breaker ------------------------------------------------------------------------------------


def test_the_breaker_admits_up_to_its_limit_and_each_release_frees_a_slot() -> None:
    table = MemoryLedger()
    nodes = [f"i-0{n:016x}" for n in range(4)]

    admitted = [table.admit("g", node, 2, AT) for node in nodes]

    assert admitted == [True, True, False, False]
    assert table.holders("g") == 2
    assert table.item(table.breaker("g"))["limit"] == 2
    assert table.release_slot("g", nodes[0], AT) == 1
    assert table.admit("g", nodes[2], 2, AT)
    assert not table.admit("g", nodes[3], 2, AT)


def test_admission_is_idempotent_for_a_holder() -> None:
    table = MemoryLedger()
    assert table.admit("g", NODE, 1, AT)

    assert table.admit("g", NODE, 1, AT), "a retried admission succeeds again"
    assert table.holders("g") == 1
    assert not table.admit("g", OTHER, 1, AT)


def test_releasing_the_last_holder_leaves_no_holders_attribute_and_counts_zero() -> None:
    table = MemoryLedger()
    table.admit("g", NODE, 2, AT)

    assert table.release_slot("g", NODE, AT) == 0

    assert ledger.HOLDERS not in table.item(table.breaker("g")), "DynamoDB drops an empty set"
    assert table.admit("g", OTHER, 1, AT), "and admits again from nothing"


def test_the_sweep_removes_holders_whose_lock_is_gone_or_expired_only() -> None:
    table = MemoryLedger()
    live, expired, unlocked = NODE, OTHER, "i-0cccccccccccccccc"
    table.take_lock(live, "live", "xid-79", NOW, NOW + 900)
    table.take_lock(expired, "stopped", "xid-79", NOW - 1000, NOW - 100)
    for holder in (live, expired, unlocked):
        assert table.admit("g", holder, 3, AT)
    assert not table.admit("g", "i-0dddddddddddddddd", 3, AT)

    table.sweep("g", NOW)

    assert table.item(table.breaker("g"))[ledger.HOLDERS] == {live}
    assert table.admit("g", "i-0dddddddddddddddd", 3, AT)


def test_a_sweep_of_only_stale_holders_empties_the_breaker() -> None:
    table = MemoryLedger()
    table.admit("g", NODE, 1, AT)

    table.sweep("g", NOW)

    assert table.holders("g") == 0


# The expressions as DynamoDB reads them ------------------------------------------------------


def test_mixed_conjunctions_are_parenthesised() -> None:
    mixed = every(either(missing("a"), present("b")), compare("c", "=", ":c"))
    assert mixed.text == "(attribute_not_exists(a) OR attribute_exists(b)) AND c = :c"
    assert mixed.placeholders == {":c"}
    assert mixed.holds({"b": 1, "c": 2}, {":c": 2})
    assert not mixed.holds({"a": 1, "c": 2}, {":c": 2})


def test_a_comparison_with_a_missing_attribute_is_false_even_for_different() -> None:
    assert not compare("decision_id", "<>", ":me").holds({}, {":me": "x"})


def test_updates_render_add_and_delete_before_set_and_alias_reserved_words() -> None:
    assert ledger.ADMIT.text == "ADD holders :me SET updated_at = :now, #limit = :limit"
    assert ledger.ADMIT.names == {"#limit": "limit"}
    assert ledger.RELEASE.text == "DELETE holders :me SET updated_at = :now"
    record = ledger.record_update("updated_at", "state")
    assert record.text == "SET #updated_at = :updated_at, #state = :state"
    assert record.names == {"#updated_at": "updated_at", "#state": "state"}
