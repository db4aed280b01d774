"""Quarantine: a proven hardware fault's node is cordoned at once, before the repair breaker.

The breaker paces the irreversible steps (reboot, replace) and may hold a decision for up to
``breaker_hold``; a node left schedulable meanwhile takes every new pod onto broken hardware.
The cordon is cheap, reversible and evicts nothing, so it does not wait for the breaker: an
acting decision (``reset``, ``reboot`` or ``replace``) of a line the node's agent shipped
(``QUARANTINED_SOURCES``: kernel and health lines, whose origin the classifier proved where
``proof_of_origin`` enforces it, an unproven one being capped to notify) marks its node right
after the fleet gate, then waits for the breaker as before.

Its own limit bounds what a storm can take out of service, as NVIDIA NVSentinel's
fault-quarantine breaker does (50 % of the nodes in 5 minutes): per ``window`` seconds, at
most ``group_percent`` of the node group and ``cluster_percent`` of the cluster's Nodes are
quarantined. The count lives in two ledger items, ``group#<asg>`` and ``cluster#<name>`` /
``quarantine#<window index>``, each a set of instance ids joined in one transaction (a
decision delivered twice joins once). A decision refused there is not cordoned: it waits for
the breaker untouched, as before, and the first refusal of a window trips loudly (the
``TRIPPED_AT`` write, whose winner pages once and counts ``QuarantineTripped``).

Order with fleet correlation: the fleet gate comes first. A sighting that makes its window a
fleet event, or joins a declared one, is held without a cordon; only the first
``fleet_min_nodes`` - 1 of a window may be quarantined before the pattern shows, and they are
given back (nodemedic's own cordon lifted) once their window is judged a fleet event, while
they wait for the breaker or at the judgement before the repair. A software fault on 40 % of
a group therefore cordons at most ``fleet_min_nodes`` - 1 of its nodes, for seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

from nodemedic.contracts.ledger import QUARANTINE_SK_PREFIX
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.expressions import (
    add_members,
    assign,
    contains,
    either,
    missing,
    smaller_than,
    update,
)

QUARANTINE_SK: Final = QUARANTINE_SK_PREFIX + "{}"
"""Sort key of one window's quarantined nodes, under the group's partition
(``ledger.BREAKER_PK``) and the cluster's (``breaker.CLUSTER_PK``)."""
NODES: Final = "nodes"
TRIPPED_AT: Final = "tripped_at"
QUARANTINED_SOURCES: Final = ("kmsg", "health")
"""The decisions quarantined: lines of the node's own agent. An AWS notice is no fault, a
person's decision or HyperPod's carries no proof of origin, and a deep check's verdict is
the gate's (``nodemedic.health``)."""
QUARANTINED_ACTIONS: Final = ("reset", "reboot", "replace")
TRIPPED_OUTCOME: Final = "quarantine-tripped"
"""The outcome of the page a refusal sends: a notice about the cluster on the decision's
way to the breaker, never the decision's own outcome."""

ROOM: Final = either(missing(NODES), smaller_than(NODES, ":limit"), contains(NODES, ":instance"))
"""The window has room under ``:limit``; a node in it already joins again (a retried task)."""
JOIN: Final = update(add_members(NODES, ":me"), assign("updated_at", ":at"))
NOT_TRIPPED: Final = missing(TRIPPED_AT)
"""The window has not tripped yet: whose write lands pages."""
TRIP: Final = update(assign(TRIPPED_AT, ":at"), assign("reason", ":reason"))


@dataclass(frozen=True)
class QuarantineRules:
    """The cluster's quarantine settings (``ClusterSettings.quarantine_*``)."""

    group_percent: int = 50
    cluster_percent: int = 50
    window: int = 300

    def __post_init__(self) -> None:
        for name, value in (("group", self.group_percent), ("cluster", self.cluster_percent)):
            if not 0 <= value <= 100:
                raise PolicyError(f"quarantine_{name}_percent must be within 0..100, not {value}")
        if self.window < 1:
            raise PolicyError(f"quarantine_window must be at least 1, not {self.window}")

    @classmethod
    def from_mapping(cls, raw: dict[str, Any]) -> QuarantineRules:
        try:
            return cls(
                group_percent=int(raw["group_percent"]),
                cluster_percent=int(raw["cluster_percent"]),
                window=int(raw["window"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyError(f"bad quarantine settings: {exc!r}") from exc

    def to_mapping(self) -> dict[str, int]:
        return asdict(self)


def share(percent: int, size: int) -> int:
    """The nodes ``percent`` of ``size`` allows, rounded down; one at least where the percent
    is above zero, so a small group can still quarantine its one sick node."""
    if percent <= 0:
        return 0
    return max(1, percent * size // 100)


@dataclass(frozen=True)
class Limits:
    """One decision's quarantine limits: nodes per window in its group and in its cluster."""

    window: str
    """The window's index (epoch seconds // ``window``), as the ledger's sort key has it."""
    group: int
    cluster: int

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


def limits(group_size: int, cluster_size: int, now_epoch: int, rules: QuarantineRules) -> Limits:
    """The limits of a decision at ``now_epoch``: a group or cluster of unknown size (0)
    counts as the node alone, never as room for a storm.

    The cluster is never smaller than the node's group: the cluster's size is its Nodes,
    which miss the instances a replace has launched until they join, while the group's
    desired capacity counts them. Counted from Nodes alone, each replace of the window
    would shrink the cluster's limit just as the window fills."""
    return Limits(
        window=str(now_epoch // rules.window),
        group=share(rules.group_percent, max(1, group_size)),
        cluster=share(rules.cluster_percent, max(1, cluster_size, group_size)),
    )


def tripped_reason(instance_id: str, group: str, found: Limits, rules: QuarantineRules) -> str:
    """What the page says of a refusal: the limits, and what the node does instead."""
    return (
        f"quarantine limit reached at {instance_id} (group {group}): at most "
        f"{found.group} node(s) of the group ({rules.group_percent} %) and {found.cluster} of "
        f"the cluster ({rules.cluster_percent} %) per {rules.window} s; the rest of this "
        "window's faulty nodes are not cordoned and wait for the breaker untouched"
    )
