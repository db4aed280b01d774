"""How the census counts a Node nodemedic never marked, or no node group owns."""

from __future__ import annotations

from nodemedic.remediate.census import UNGROUPED, NodeState, census


def test_unmarked_nodes_count_by_cordon_and_ungrouped_ones_under_none() -> None:
    counts = census(
        [
            NodeState(group=None, health=None, cordoned=False),
            NodeState(group=None, health="SomethingElse", cordoned=True),
            NodeState(group="gpu", health="UnschedulablePendingReboot", cordoned=True),
            NodeState(group="gpu", health="Schedulable", cordoned=True),
        ]
    )
    assert counts == {
        (UNGROUPED, "Schedulable"): 1,
        (UNGROUPED, "Unschedulable"): 1,
        (UNGROUPED, "UnschedulablePendingReboot"): 0,
        (UNGROUPED, "UnschedulablePendingReplacement"): 0,
        ("gpu", "Schedulable"): 1,
        ("gpu", "Unschedulable"): 0,
        ("gpu", "UnschedulablePendingReboot"): 1,
        ("gpu", "UnschedulablePendingReplacement"): 0,
    }
    assert census([]) == {}
