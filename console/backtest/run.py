"""One remediation of the backtest's state machine (``console.backtest.machine``): what its
phases leave for the later ones (``Run``), and what became of it (``Outcome``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from nodemedic.remediate import phases
from nodemedic.remediate.decision import Decision
from nodemedic.remediate.policy import Plan


@dataclass
class Outcome:
    """What became of one decision."""

    decision: Decision
    decided_at: int
    action: str = ""
    """notify, monitor, duplicate, upgraded, reboot, replace, held-breaker or held-fleet."""
    would: str = ""
    """The action the plan asked for (what a monitor-only cluster would have done)."""
    reason: str = ""
    acted_at: int | None = None
    """When the last step happened: the cordon, the reboot, the replacement, the hold."""
    cordoned_at: int | None = None
    quarantined_at: int | None = None
    """When the quarantine cordoned the node, before the breaker admitted its repair."""
    quarantine_refused: bool = False
    """The quarantine limit had no room for it: its node waited for the breaker untouched."""
    escalated: bool = False
    trips: list[str] = field(default_factory=list)


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Run:
    """One remediation in flight: what its phases leave for the later ones, as the state
    machine's execution state does."""

    decision: Decision
    now: int
    out: Outcome
    planned: Plan = field(init=False)
    """Set by the intake."""
    locked: bool = False
    admitted: bool = False
    held: bool = False
    """The breaker refused it at least once."""


def held_for_fleet(run: Run, reason: str) -> str:
    run.out.action, run.out.acted_at, run.out.reason = "held-fleet", run.now, reason
    return phases.REPORT
