"""How the scale bench reads the ledger's outcomes after a storm: as ``nodemedic history``
tells them and the dashboard counts them, failures included."""

from __future__ import annotations

from bench.scalefaults import ended_as


def test_a_failed_record_counts_as_failed_as_the_dashboard_counts_it() -> None:
    """The failure phase records the state ``failed`` and no outcome; the dashboard counts
    ``Remediations{Outcome=failed}`` for it (a 1,000-node burst's 97 failures were read as
    none)."""
    assert ended_as({"state": "failed", "failed_step": "drain"}) == "failed"


def test_an_outcome_is_how_a_record_ended_and_a_running_one_has_none() -> None:
    assert ended_as({"state": "closed", "outcome": "rebooted"}) == "rebooted"
    assert ended_as({"state": "marking"}) is None
