"""What the reconcile's silent and overdue ops answer when they find more nodes than a
notification names."""

from __future__ import annotations

from lambdas.kube.silence import NAMED, summary


def test_a_cut_list_keeps_its_first_nodes_and_says_how_many_it_left_out() -> None:
    found = [f"node-{n}" for n in range(NAMED + 7)]
    answer = summary(found, [], "why")
    assert answer["count"] == NAMED + 7
    assert answer["nodes"] == found[:NAMED]
    assert answer["left_out"] == 7
    assert summary(found[:3], [], "why")["left_out"] == 0
