"""The phases of a remediation, in the order a decision goes through them.

Written here once: the state machine (``stacks.remediation.phases``) wires one builder per
phase in this order, and the backtest (``console.backtest.machine``) runs one step per
phase in the same order, so what the backtest predicts is what the state machine does.
``tests/unit/nodemedic/remediate/test_phases.py`` fails when a phase is missing from either side.

A phase may end the remediation early: the ones that hold or only monitor a node go on to
the report, a duplicate ends at once. The failure phase is no step of this order: any
phase's error goes there (``stacks.remediation.phases.failure``).
"""

from __future__ import annotations

from typing import Final

INTAKE: Final = "intake"
"""Check and record the decision, find its node group, plan: notify, monitor or act."""
FLEET_SIGHTING: Final = "fleet sighting"
"""An acting decision's node counted in its fault's window (``fleet``)."""
LOCK: Final = "lock"
"""One remediation per node; a second decision is a duplicate, a recurrence or an upgrade.
A monitor-only plan marks the node here and goes on to the report."""
FLEET_GATE: Final = "fleet gate"
"""A fleet event declared already, or by this sighting, holds the node before the breaker."""
QUARANTINE: Final = "quarantine"
"""A proven reset, reboot or replace fault's node cordoned at once, under its own limit
(``quarantine``), before the breaker paces the repair."""
BREAKER_ADMISSION: Final = "breaker admission"
"""A slot of the group and of the cluster, and room in the rate windows (``breaker``); a
decision refused waits, up to ``breaker_hold``."""
FLEET_RECHECK: Final = "fleet recheck"
"""A decision the breaker held reads its window again: declared meanwhile, it is held."""
MARK: Final = "mark"
"""Condition, health label, taint and cordon."""
DRAIN: Final = "drain"
"""The Node emptied through the Eviction API."""
FLEET_JUDGEMENT: Final = "fleet judgement"
"""Right before the irreversible step: the window settles and is judged."""
APPROVAL: Final = "approval"
"""Where the node's group (or else the cluster) asks for it, a person's answer before the
irreversible step: approved (or unanswered, where that proceeds) goes on; denied (or
unanswered, where that holds) fails, the node held (``approval``)."""
REBOOT_OR_REPLACE: Final = "reboot or replace"
"""The plan's action, a reboot escalated to a replacement when the node does not come back
healthy or a stronger decision upgraded it; where ``gpu_reset`` is on, a GPU reset first,
which falls back to the reboot when it fails or the GPU was reset within the window."""
REPORT: Final = "report"
"""Metrics, the mail, the ledger record closed."""
RELEASE: Final = "release"
"""The breaker's slots and the node lock given back."""

PHASES: Final = (
    INTAKE,
    FLEET_SIGHTING,
    LOCK,
    FLEET_GATE,
    QUARANTINE,
    BREAKER_ADMISSION,
    FLEET_RECHECK,
    MARK,
    DRAIN,
    FLEET_JUDGEMENT,
    APPROVAL,
    REBOOT_OR_REPLACE,
    REPORT,
    RELEASE,
)
