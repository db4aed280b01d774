"""The quarantine's limit (nodemedic/remediate/quarantine.py) on an in-memory ledger, from
the same expressions the state machine's transaction sends, and the policy Lambda's
``quarantine`` op. No AWS, no apiserver."""

from __future__ import annotations

import pytest

from lambdas.policy.handler import handler
from nodemedic.remediate import quarantine
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.quarantine import QuarantineRules, limits, share
from tests.support.ledger import MemoryLedger

NOW = 1_800_000_000
RULES = QuarantineRules(group_percent=50, cluster_percent=10, window=300)


def take(table: MemoryLedger, instance: str, found: quarantine.Limits) -> bool:
    """ "Take quarantine": the group's and the cluster's window, both or neither."""
    values = {":me": frozenset({instance}), ":instance": instance, ":at": "now"}
    sk = quarantine.QUARANTINE_SK.format(found.window)
    return table.transact(
        [
            (("group#p5", sk), quarantine.JOIN, quarantine.ROOM, {**values, ":limit": found.group}),
            (
                ("cluster#c", sk),
                quarantine.JOIN,
                quarantine.ROOM,
                values | {":limit": found.cluster},
            ),
        ]
    )


@pytest.mark.parametrize(
    ("percent", "size", "expected"),
    [(50, 20, 10), (50, 3, 1), (10, 5, 1), (0, 100, 0), (100, 7, 7), (50, 0, 1)],
)
def test_a_share_is_rounded_down_but_lets_one_sick_node_through(
    percent: int, size: int, expected: int
) -> None:
    assert share(percent, max(1, size)) == expected


def test_the_group_limit_refuses_the_next_node_of_the_window_and_both_items_stay_as_they_were() -> (
    None
):
    table = MemoryLedger()
    found = limits(group_size=4, cluster_size=100, now_epoch=NOW, rules=RULES)
    assert (found.group, found.cluster) == (2, 10)

    assert [take(table, f"i-{n}", found) for n in range(4)] == [True, True, False, False]
    # A retried task of a node in the window joins again.
    assert take(table, "i-0", found)
    sk = quarantine.QUARANTINE_SK.format(found.window)
    assert table.item(("group#p5", sk))["nodes"] == {"i-0", "i-1"}
    assert table.item(("cluster#c", sk))["nodes"] == {"i-0", "i-1"}


def test_the_cluster_limit_holds_across_groups_and_a_new_window_has_room_again() -> None:
    table = MemoryLedger()
    found = limits(group_size=10, cluster_size=20, now_epoch=NOW, rules=RULES)  # 2 of 20
    assert [take(table, f"i-{n}", found) for n in range(3)] == [True, True, False]
    later = limits(group_size=10, cluster_size=20, now_epoch=NOW + RULES.window, rules=RULES)
    assert later.window != found.window
    assert take(table, "i-2", later)


def test_a_replace_still_joining_does_not_shrink_the_cluster_under_its_own_group() -> None:
    # One group of 8 is the whole cluster; three of the window's nodes were replaced and the
    # last newcomer has not joined yet: 7 Nodes, but the group still wants 8.
    table = MemoryLedger()
    rules = QuarantineRules(group_percent=50, cluster_percent=50, window=300)
    found = limits(group_size=8, cluster_size=7, now_epoch=NOW, rules=rules)
    assert (found.group, found.cluster) == (4, 4)
    assert [take(table, f"i-{n}", found) for n in range(5)] == [True] * 4 + [False]


def test_a_window_trips_once() -> None:
    table = MemoryLedger()
    key = ("cluster#c", quarantine.QUARANTINE_SK.format("6000000"))
    values = {":at": "now", ":reason": "limit"}
    assert table.update(key, quarantine.TRIP, quarantine.NOT_TRIPPED, values)
    assert not table.update(key, quarantine.TRIP, quarantine.NOT_TRIPPED, values)


def test_the_policy_op_gives_the_window_the_limits_and_the_page() -> None:
    found = handler(
        {
            "op": "quarantine",
            "at": "2027-01-15T08:00:00Z",
            "group": {"found": True, "name": "p5", "size": 8},
            "cluster_nodes": 40,
            "instance_id": "i-0abc",
            "rules": RULES.to_mapping(),
        },
        None,
    )
    assert (found["group"], found["cluster"]) == (4, 4)
    assert found["window"] == str(1_800_000_000 // 300)
    assert "i-0abc" in found["reason"] and "50 %" in found["reason"]


@pytest.mark.parametrize(
    "bad",
    [{"group_percent": 101, "cluster_percent": 1, "window": 1}, {"group_percent": 1}],
)
def test_bad_rules_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(PolicyError):
        QuarantineRules.from_mapping(bad)
