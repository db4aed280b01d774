"""The state machine and the backtest go through the same phases: each phase of
``nodemedic.remediate.phases.PHASES`` has a builder in the stacks and a step in the
backtest, and nothing else has one, so a phase added to or removed from one side alone
fails here (both walk ``PHASES`` for the order)."""

from __future__ import annotations

from console.backtest.machine import STEPS
from nodemedic.remediate.phases import PHASES
from stacks.remediation.phases import BUILDERS


def test_each_phase_is_named_once() -> None:
    assert len(set(PHASES)) == len(PHASES)


def test_the_state_machine_builds_every_phase_and_no_other() -> None:
    assert set(BUILDERS) == set(PHASES)


def test_the_backtest_steps_through_every_phase_and_no_other() -> None:
    assert set(STEPS) == set(PHASES)
