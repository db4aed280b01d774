"""The repair target: what owns a node's instance, which rungs of the repair ladder that owner
allows, and what a planned action becomes where it does not.

A rung is done the owner's way or not at all: an Auto Scaling group replaces an instance
set Unhealthy, Karpenter one whose NodeClaim is deleted, HyperPod one named in
``BatchReplaceClusterNodes``; EKS Auto Mode's EC2 managed instances refuse direct EC2 and
SSM actions, so there only a replacement is possible. An action the owner does not allow
is capped here, before anything touches the node, so an execution never fails halfway
because a rung was impossible: it is done one rung lower, made a replacement where a
setting asks so (``auto_mode_reboot``), or only notified. Where a replacement would give
up reserved capacity (a Capacity Block, an On-Demand Capacity Reservation), the ladder ends
in a hand-off instead: the node stays cordoned and drained, people are told, nothing is
terminated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from nodemedic.contracts.substrates import SUBSTRATES, Substrate
from nodemedic.remediate.errors import PolicyError

Rung = Literal["reset", "reboot", "replace", "spare"]
RUNGS: Final[Mapping[Substrate, tuple[Rung, ...]]] = {
    "autoscaling": ("reset", "reboot", "replace", "spare"),
    "karpenter": ("reset", "reboot", "replace"),
    "automode": ("replace",),
    # HyperPod's nodes are reached through SageMaker, not SSM by instance id: no GPU reset.
    "hyperpod": ("reboot", "replace"),
    "none": (),
}
"""The rungs each substrate allows, weakest first (README's table says the same)."""
AutoModeReboot = Literal["notify", "replace"]
HyperPodRepair = Literal["defer", "when_recovery_off"]
DEFERRED: Final = "deferred"
"""The outcome of a decision left to the substrate's own repair (HyperPod's recovery)."""
AUTOMATIC_RECOVERY: Final = "Automatic"


@dataclass(frozen=True)
class Target:
    """Who repairs the node: its substrate and what the state machine learnt of it."""

    substrate: Substrate = "none"
    reserved: bool = False
    """Its capacity is reserved (``reserved_capacity``): a replacement may not get it back."""
    defers_to: str = ""
    """Why the substrate's own repair has the node (empty: it does not): then nodemedic
    only notifies."""


@dataclass(frozen=True)
class Capped:
    """A planned action as the target allows it."""

    action: str
    """The action to take; ``notify`` where nothing may be done to the node."""
    hand_off: bool = False
    """A replacement that would give up reserved capacity: drain, keep the node cordoned,
    tell people, never terminate."""
    outcome: str = ""
    """The ledger's outcome where ``action`` became ``notify`` for the target's sake."""
    reason: str = ""
    """Why the action changed (empty: it did not), the start of the plan's reason."""


def hyperpod_defers(node_recovery: str | None, repair: str) -> str:
    """Why a HyperPod node is left to HyperPod (empty: nodemedic acts). ``NodeRecovery``
    absent from DescribeCluster is taken as ``Automatic``, its default, and any ``repair``
    but ``when_recovery_off`` as ``defer``: two repairs racing on one node is the harm to
    avoid, a notification the cheap mistake."""
    recovery = node_recovery or AUTOMATIC_RECOVERY
    if repair != "when_recovery_off":
        return f"hyperpod_repair is {repair}: HyperPod repairs its nodes itself"
    if recovery == AUTOMATIC_RECOVERY:
        return "HyperPod's automatic node recovery is on (NodeRecovery Automatic)"
    return ""


def cap(action: str, target: Target, *, auto_mode_reboot: str) -> Capped:
    """``action`` as ``target`` allows it. Unmanaged nodes (``none``) are left to the plan's
    own monitor-only rule, so their outcome stays what it was. An ``auto_mode_reboot`` but
    ``replace`` only notifies: a default never harms a node."""
    if action == "notify" or target.substrate == "none":
        return Capped(action)
    if target.defers_to:
        return Capped("notify", outcome=DEFERRED, reason=f"{action} deferred: {target.defers_to}; ")
    allowed = RUNGS[target.substrate]
    reason = ""
    if action == "reset" and "reset" not in allowed:
        action, reason = "reboot", f"{target.substrate} has no GPU reset rung; "
    if action == "reboot" and "reboot" not in allowed:
        # Auto Mode, the one substrate without a reboot: its instances refuse EC2 actions.
        if auto_mode_reboot != "replace":
            return Capped(
                "notify",
                outcome="notified",
                reason=reason + "EKS Auto Mode cannot reboot a node and auto_mode_reboot is "
                "notify; ",
            )
        action, reason = "replace", reason + "EKS Auto Mode cannot reboot a node "
        reason += "(auto_mode_reboot is replace); "
    if action == "replace" and target.reserved:
        return Capped(
            action,
            hand_off=True,
            reason=reason + "a replacement would give up reserved capacity: handed off, cordoned; ",
        )
    return Capped(action, reason=reason)


def target_of(
    raw: Mapping[str, Any] | None, group: str | None, *, reserved: Sequence[str], repair: str
) -> Target:
    """The target the state machine found (``raw``: ``{substrate, node_recovery}``; absent
    where it looks only in Auto Scaling) for a node of ``group`` (None: in no group)."""
    found = raw or {}
    substrate = found.get("substrate") or ("autoscaling" if group is not None else "none")
    if substrate not in SUBSTRATES:
        raise PolicyError(f"target substrate must be one of {', '.join(SUBSTRATES)}")
    defers = hyperpod_defers(found.get("node_recovery"), repair) if substrate == "hyperpod" else ""
    return Target(substrate, reserved=group is not None and group in reserved, defers_to=defers)


def hyperpod_group(cluster: str, description: Mapping[str, Any]) -> dict[str, Any]:
    """A HyperPod cluster as the breaker's group (``$.group``): its nodes, every instance
    group's ``CurrentCount`` from DescribeCluster, share its per-group limits, as an Auto
    Scaling group's do; and its ``NodeRecovery``, read at each decision."""
    size = sum(int(group.get("CurrentCount", 0)) for group in description["InstanceGroups"])
    return {
        "group": {"name": cluster, "size": size, "found": True},
        "node_recovery": str(description.get("NodeRecovery") or AUTOMATIC_RECOVERY),
    }
