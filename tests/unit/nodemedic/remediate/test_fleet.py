"""Fleet correlation's rules (nodemedic/remediate/fleet.py) on an in-memory ledger, from the
same expressions the state machine's tasks send, and its arithmetic: K nodes, P % of a
group, the window, the settle, redelivery. No AWS, no apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from lambdas.policy.handler import handler
from nodemedic.remediate import fleet
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.fleet import FleetRules, Sightings, is_fleet, judge
from tests.support.ledger import MemoryLedger

NOW = 1_800_000_000
WINDOW = ("group#trn1", "fleet#neuron-dma-error")
RULES = FleetRules(min_nodes=3, min_percent=50, window=600, settle=60)


def sight(table: MemoryLedger, instance: str, at: int, rules: FleetRules = RULES) -> str:
    """ "Join fleet window", or on its failure "Open fleet window": the verdict it leaves."""
    values = {":me": frozenset({instance}), ":at": at, ":since": at - rules.window}
    if not table.update(WINDOW, fleet.JOIN, fleet.IN_WINDOW, values):
        assert table.update(WINDOW, fleet.REOPEN, fleet.EXPIRED, {**values, ":open": fleet.OPEN})
    return str(table.item(WINDOW)[fleet.VERDICT])


def seen(table: MemoryLedger) -> Sightings:
    item = table.item(WINDOW)
    return Sightings(
        item[fleet.FIRST_AT], tuple(sorted(item[fleet.NODES])), item[fleet.VERDICT] == fleet.FLEET
    )


@pytest.mark.parametrize(
    ("count", "size", "expected"),
    [
        (1, 1, False),  # one node is never a pattern, even all of a group of one
        (2, 100, False),
        (3, 100, True),  # K
        (2, 4, True),  # 50 % of four
        (2, 5, False),  # 40 %
        (1, 2, False),
    ],
)
def test_k_nodes_or_p_percent_of_the_group_make_a_fleet_event(
    count: int, size: int, expected: bool
) -> None:
    assert is_fleet(count, size, RULES) is expected


def test_a_share_of_zero_percent_leaves_only_k() -> None:
    rules = FleetRules(min_nodes=4, min_percent=0)
    assert not is_fleet(3, 3, rules)
    assert is_fleet(4, 1000, rules)


def test_sightings_within_the_window_count_each_node_once() -> None:
    table = MemoryLedger()
    sight(table, "i-a", NOW)
    sight(table, "i-b", NOW + 1)
    # A decision delivered twice, or a retried task: the same node again.
    sight(table, "i-b", NOW + 2)
    sight(table, "i-a", NOW + 599)
    assert seen(table) == Sightings(NOW, ("i-a", "i-b"), False)


def test_a_sighting_after_the_window_opens_a_new_one() -> None:
    table = MemoryLedger()
    sight(table, "i-a", NOW)
    sight(table, "i-b", NOW + 300)
    sight(table, "i-c", NOW + 600)
    assert seen(table) == Sightings(NOW + 600, ("i-c",), False)


def test_one_declaration_per_window_and_none_for_a_window_reopened_since() -> None:
    table = MemoryLedger()
    for node in ("i-a", "i-b", "i-c"):
        sight(table, node, NOW)
    values = {":fleet": fleet.FLEET, ":open": fleet.OPEN, ":now": "t", ":first": NOW}
    declare = (fleet.DECLARE, fleet.DECLARABLE)
    assert table.update(WINDOW, *declare, {**values, ":me": "d-a"})
    assert not table.update(WINDOW, *declare, {**values, ":me": "d-b"})
    assert table.item(WINDOW)["declared_by"] == "d-a"
    # A later sighting in the window sees the verdict before it is ever cordoned.
    assert sight(table, "i-d", NOW + 10) == fleet.FLEET
    # A new window starts undeclared; a declaration judged on the old one does not land.
    assert sight(table, "i-e", NOW + 600) == fleet.OPEN
    assert not table.update(WINDOW, *declare, {**values, ":me": "d-c"})


def _judge(sightings: Sightings | None, now: int, instance: str = "i-a") -> fleet.Verdict:
    return judge(
        sightings,
        instance_id=instance,
        fault_id="neuron-dma-error",
        group="trn1",
        group_size=8,
        now_epoch=now,
        rules=RULES,
    )


def test_judge_waits_for_the_window_to_settle_then_says_no_fleet() -> None:
    one = Sightings(NOW, ("i-a",), False)
    assert (_judge(one, NOW + 5).fleet, _judge(one, NOW + 5).wait) == (False, 55)
    assert (_judge(one, NOW + 60).fleet, _judge(one, NOW + 60).wait) == (False, 0)


def test_judge_holds_at_once_when_the_pattern_is_there() -> None:
    three = Sightings(NOW, ("i-a", "i-b", "i-c"), False)
    verdict = _judge(three, NOW + 1)
    assert (verdict.fleet, verdict.wait, verdict.count) == (True, 0, 3)
    # Held at once, but its one mail waits for the window to settle, to list the whole storm.
    assert verdict.settles_in == 59
    assert _judge(three, NOW + 61).settles_in == 0
    assert verdict.nodes == ["i-a", "i-b", "i-c"]
    assert "3 of the 8 nodes of group trn1" in verdict.summary
    assert _judge(Sightings(NOW, ("i-a",), True), NOW).fleet


def test_a_node_outside_the_current_window_is_its_own_fault() -> None:
    later = Sightings(NOW + 700, ("i-x", "i-y", "i-z"), True)
    assert (_judge(later, NOW + 700).fleet, _judge(later, NOW + 700).wait) == (False, 0)
    assert not _judge(None, NOW).fleet


def test_the_policy_lambda_judges_the_state_machines_read() -> None:
    window: dict[str, Any] = {
        "found": True,
        "first_at": str(NOW),
        "nodes": ["i-b", "i-a"],
        "verdict": "open",
    }
    event = {
        "op": "fleet",
        "window": window,
        "instance_id": "i-a",
        "fault_id": "neuron-dma-error",
        "group": {"name": "trn1", "size": 4, "found": True},
        "now": "2027-01-15T08:00:10Z",
        "rules": RULES.to_mapping(),
    }
    result = handler(event, None)
    assert (result["fleet"], result["count"], result["nodes"]) == (True, 2, ["i-a", "i-b"])
    assert handler({**event, "window": {"found": False}}, None)["fleet"] is False
    with pytest.raises(PolicyError):
        handler({**event, "window": {"found": True, "nodes": ["i-a"]}}, None)


@pytest.mark.parametrize(
    "bad",
    [{"min_nodes": 1}, {"min_percent": 101}, {"window": 0}, {"settle": 700}, {"settle": -1}],
)
def test_impossible_fleet_settings_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(PolicyError):
        FleetRules(**bad)
