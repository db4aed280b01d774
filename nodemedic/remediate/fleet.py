"""Fleet correlation: the same fault on many nodes of a group at once is a fleet event.

Hardware does not fail in lockstep; a driver rollout, a firmware push or a job does. When
at least ``min_nodes`` nodes, or ``min_percent`` of a node group, report the same fault
within ``window`` seconds, rebooting or replacing them would churn healthy capacity and
cure nothing: nodemedic holds its hand, gives the nodes back, marks them and notifies once.

The first nodes of a storm arrive before the pattern shows. So every acting decision
records a *sighting* at once (before the lock, adding no wait before the cordon), and the
remediation waits, only right before its irreversible step (reboot or replace), until
``settle`` seconds have passed since the fault's first sighting; then it *judges*. A
sighting of an event already declared is monitor-only from the start.

The sightings of a fault live in one ledger item per group (``group#<asg>`` /
``fleet#<fault_id>``): ``first_at`` (epoch seconds the window opened), ``nodes`` (a string
set of instance ids: a decision delivered twice, or a retried task, adds its node once)
and ``verdict`` (``open``, or ``fleet`` once declared; the conditional write that declares
it decides who sends the one notification). A window lasts ``window`` seconds from its
first sighting; the next sighting after that opens a new one. The expressions are
``nodemedic.remediate.expressions`` values, evaluated in memory by the unit tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from nodemedic.contracts.ledger import FLEET_SK_PREFIX
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.expressions import (
    add_members,
    assign,
    compare,
    either,
    every,
    missing,
    update,
)

FLEET_SK: Final = FLEET_SK_PREFIX + "{}"
"""Sort key of a fault's sightings under its group's partition (``ledger.BREAKER_PK``)."""
FIRST_AT: Final = "first_at"
NODES: Final = "nodes"
VERDICT: Final = "verdict"
OPEN: Final = "open"
FLEET: Final = "fleet"
OUTCOME: Final = "fleet"
"""The ``Outcome`` of a remediation held for a fleet event."""

IN_WINDOW: Final = compare(FIRST_AT, ">", ":since")
"""The fault's window is open: it opened after ``:since`` (now minus ``window``)."""
JOIN: Final = update(add_members(NODES, ":me"), assign("updated_at", ":at"))
"""Sent on ``IN_WINDOW``: this node joins the window's sightings (a set: once per node)."""
EXPIRED: Final = either(missing(FIRST_AT), compare(FIRST_AT, "<=", ":since"))
"""No window yet, or the last one is over."""
REOPEN: Final = update(
    assign(FIRST_AT, ":at"),
    assign(NODES, ":me"),
    assign(VERDICT, ":open"),
    assign("updated_at", ":at"),
)
"""Sent on ``EXPIRED``: a new window with this node as its first sighting. Two decisions
racing to open one: the loser's condition fails and it joins the winner's window."""
DECLARABLE: Final = every(compare(VERDICT, "=", ":open"), compare(FIRST_AT, "=", ":first"))
"""The window judged a fleet event (opened at ``:first``) is still open and undeclared."""
DECLARE: Final = update(
    assign(VERDICT, ":fleet"), assign("declared_at", ":now"), assign("declared_by", ":me")
)
"""Whose write lands sends the fleet event's one notification; everybody else only holds."""


@dataclass(frozen=True)
class FleetRules:
    """The cluster's fleet settings (``nodemedic.settings.ClusterSettings.fleet_*``)."""

    min_nodes: int = 3
    min_percent: int = 50
    window: int = 600
    settle: int = 60

    def __post_init__(self) -> None:
        if self.min_nodes < 2:
            raise PolicyError(f"fleet_min_nodes must be at least 2, not {self.min_nodes}")
        if not 0 <= self.min_percent <= 100:
            raise PolicyError(f"fleet_min_percent must be within 0..100, not {self.min_percent}")
        if self.window < 1:
            raise PolicyError(f"fleet_window must be at least 1, not {self.window}")
        if not 0 <= self.settle <= self.window:
            raise PolicyError(
                f"fleet_settle must be within 0..fleet_window ({self.window}), not {self.settle}"
            )

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> FleetRules:
        try:
            return cls(
                min_nodes=int(raw["min_nodes"]),
                min_percent=int(raw["min_percent"]),
                window=int(raw["window"]),
                settle=int(raw["settle"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyError(f"bad fleet settings: {exc!r}") from exc

    def to_mapping(self) -> dict[str, int]:
        return asdict(self)


def is_fleet(count: int, group_size: int, rules: FleetRules) -> bool:
    """``count`` nodes of a group of ``group_size`` with the same fault in one window make a
    fleet event: at least ``min_nodes``, or at least ``min_percent`` of the group. The share
    needs two nodes at least: one node is never a pattern, even in a group of one."""
    if count >= rules.min_nodes:
        return True
    return rules.min_percent > 0 and count >= 2 and count * 100 >= rules.min_percent * group_size


@dataclass(frozen=True)
class Sightings:
    """A fault's window as the ledger holds it."""

    first_at: int
    nodes: tuple[str, ...]
    declared: bool


def sightings_of(window: Mapping[str, Any]) -> Sightings | None:
    """The window as the state machine read it: ``{found, first_at, nodes, verdict}``, or
    ``{found: false}`` when there is none."""
    if not window.get("found"):
        return None
    try:
        return Sightings(
            first_at=int(window[FIRST_AT]),
            nodes=tuple(sorted(str(n) for n in window[NODES])),
            declared=window[VERDICT] == FLEET,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyError(f"fleet window is not a window of sightings: {exc!r}") from exc


@dataclass(frozen=True)
class Verdict:
    fleet: bool
    """Hold: reboot and replace nothing."""
    wait: int
    """Seconds to wait before judging again: the window is younger than ``settle``."""
    settles_in: int
    """Seconds until the window is ``settle`` old: the declarer's one mail waits for it, so
    that it lists every node of a storm, not those seen when the event was declared."""
    first_at: int
    count: int
    nodes: list[str]
    summary: str

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    seen: Sightings | None,
    *,
    instance_id: str,
    fault_id: str,
    group: str,
    group_size: int,
    now_epoch: int,
    rules: FleetRules,
) -> Verdict:
    """Whether ``instance_id``'s fault is part of a fleet event, or how long to wait before
    that is known. A window this node is not in (over, and a new one opened since) says
    nothing about it: it is remediated as its own fault."""
    if seen is None or instance_id not in seen.nodes:
        return Verdict(False, 0, 0, 0, 0, [], f"{fault_id}: the node's fleet window is over")
    count = len(seen.nodes)
    fleet = seen.declared or is_fleet(count, group_size, rules)
    settles_in = max(0, seen.first_at + rules.settle - now_epoch)
    wait = 0 if fleet else settles_in
    summary = (
        f"fleet event: {fault_id} on {count} of the {group_size} nodes of group {group} "
        f"within fleet_window ({rules.window} s; fleet_min_nodes {rules.min_nodes}, "
        f"fleet_min_percent {rules.min_percent}): a rollout or a job, not hardware; "
        "nothing is rebooted or replaced, the nodes are given back and marked"
        if fleet
        else f"{fault_id} on {count} node(s) of group {group}: no fleet event"
    )
    return Verdict(fleet, wait, settles_in, seen.first_at, count, list(seen.nodes), summary)
