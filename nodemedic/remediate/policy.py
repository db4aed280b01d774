"""Remediation policy: how far nodemedic may act on one decision, and the wait loops' bounds.

The state machine routes on what ``plan`` returns; everything here is plain arithmetic on
numbers and timestamps that Amazon States Language cannot do (multiplication, time
differences), so it is tested as Python and called from a thin Lambda. The ledger's own
rules (lock, breaker, escalation) are ``nodemedic.remediate.ledger``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from nodemedic.contracts.kube import MANUAL_SOURCE, PLANNED_SOURCE, STATUS_OF_ACTION
from nodemedic.health.gpu_reset import gpu_of
from nodemedic.health.instance_types import gpu_reset_of
from nodemedic.remediate import approval, parking
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.ledger import admission_limit, reboot_escalates
from nodemedic.remediate.target import Target, cap

Mode = Literal["notify", "monitor", "act"]
ACTIONS = tuple(STATUS_OF_ACTION)
REPLACEMENT_STATUS = STATUS_OF_ACTION["replace"]
REFUSED = "refused"
"""The outcome of a manual request where nodemedic does not act (a group outside
``node_groups``, ``recovery_mode: None``, ``dry_run``): nothing is done to the node."""
UNCHANGED_SOURCES = (MANUAL_SOURCE, PLANNED_SOURCE)
"""Decisions whose action no ``actions`` setting changes (``overridden``)."""
NO_GROUP = "none"
"""The ``NodeGroup`` dimension and ledger value of an instance outside any Auto Scaling group."""
MAX_BACKOFF = 8
"""A drain blocked by a PodDisruptionBudget waits twice as long each round, up to this many
times ``poll_seconds``."""
MAX_DRAIN_SETTLE = 10
"""Seconds at most that one drain round waits for the pods it evicted to terminate."""
LOCK_WAIT_ROUNDS = 10
"""Polls a stronger decision waits for the lock of a remediation giving its node back: that
one has only its clear and its report left. Then the decision fails, loudly."""


@dataclass(frozen=True)
class Policy:
    """The cluster's safety settings, as baked into the state machine at synth time.

    ``node_groups`` lists the Auto Scaling groups nodemedic may act on; empty means none
    (every decision is monitor-only): the stack's IAM guardrails deny a reboot or a
    replacement outside the listed groups, so acting on an unlisted group would cordon and
    drain a node only to fail at the last step and strand it.
    """

    recovery_mode: str = "Automatic"
    dry_run: bool = False
    node_groups: tuple[str, ...] = ()
    max_unhealthy_percent: int = 20
    max_parallel: int = 2
    escalation_window: int = 3600
    lock_seconds: int = 86400
    force_drain: bool = False
    history_days: int = 90
    actions: tuple[tuple[str, str], ...] = ()
    """(rule id or component, action) the fault takes instead of the decision's."""
    wait_before_acting: int = 0
    drain_timeout: int = 600
    drain_rounds: int = 82
    """``drain_rounds(drain_timeout, poll_seconds)``: the state machine's drain loop bound."""
    approval: str = "none"
    approval_timeout: int = 14400
    approval_timeout_default: str = "hold"
    """Which actions wait for a person, how long, and what an unanswered request comes to
    (``nodemedic.remediate.approval``)."""
    auto_mode_reboot: str = "notify"
    hyperpod_repair: str = "defer"
    reserved_capacity: tuple[str, ...] = ()
    """The substrates' settings (``nodemedic.remediate.target``): what an Auto Mode node's
    reboot becomes, whether HyperPod's nodes are repaired, the groups on reserved capacity."""

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Policy:
        try:
            return cls(
                recovery_mode=str(raw["recovery_mode"]),
                dry_run=bool(raw["dry_run"]),
                node_groups=tuple(str(g) for g in raw["node_groups"]),
                max_unhealthy_percent=int(raw["max_unhealthy_percent"]),
                max_parallel=int(raw["max_parallel"]),
                escalation_window=int(raw["escalation_window"]),
                lock_seconds=int(raw["lock_seconds"]),
                force_drain=bool(raw["force_drain"]),
                history_days=int(raw["history_days"]),
                actions=tuple((str(k), str(v)) for k, v in dict(raw["actions"]).items()),
                wait_before_acting=int(raw["wait_before_acting"]),
                drain_timeout=int(raw["drain_timeout"]),
                drain_rounds=int(raw["drain_rounds"]),
                approval=str(raw.get("approval", "none")),
                approval_timeout=int(raw.get("approval_timeout", 14400)),
                approval_timeout_default=str(raw.get("approval_timeout_default", "hold")),
                auto_mode_reboot=str(raw.get("auto_mode_reboot", "notify")),
                hyperpod_repair=str(raw.get("hyperpod_repair", "defer")),
                reserved_capacity=tuple(str(g) for g in raw.get("reserved_capacity", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyError(f"bad policy settings: {exc!r}") from exc

    def to_mapping(self) -> dict[str, Any]:
        """The policy as the state machine bakes it in; without the approval settings where
        nothing is asked (``from_mapping``'s defaults), so a cluster that never asks keeps
        its template as it was before approval existed."""
        values = asdict(self)
        values["node_groups"] = list(self.node_groups)
        values["actions"] = dict(self.actions)
        if self.approval == "none":
            for key in ("approval", "approval_timeout", "approval_timeout_default"):
                del values[key]
        values["reserved_capacity"] = list(self.reserved_capacity)
        for key in ("auto_mode_reboot", "hyperpod_repair", "reserved_capacity"):
            if getattr(self, key) == getattr(Policy, key):  # likewise the substrates'
                del values[key]
        return values


@dataclass(frozen=True)
class Group:
    """The Auto Scaling group an instance belongs to; ``size`` is its desired capacity."""

    name: str
    size: int


@dataclass(frozen=True)
class Plan:
    mode: Mode
    action: str
    health_status: str
    escalated: bool
    reason: str
    outcome: str
    """What the ledger and the ``Outcome`` dimension say when ``mode`` is not ``act``."""
    limit: int
    """Admit this remediation only while fewer than ``limit`` of its group are in flight."""
    now_epoch: int
    lock_expires_epoch: int
    force_drain: bool
    """Delete the pods that are still on the node once ``drain_timeout`` is spent. Only
    before a replacement, and only where ``force_drain`` is set: before a reboot the kubelet
    still runs the pods, and a pod deleted with grace 0 may run twice."""
    purge_at: int
    """When the ledger may let the decision's record go (epoch seconds, its time to live):
    ``history_days`` from now, what ``nodemedic history`` promises to show."""
    max_parallel: int
    max_unhealthy_percent: int
    """The group's limits ``limit`` comes from, for the breaker's notification."""
    wait_before_acting: int
    """Seconds the marked node waits before its drain (its group's ``wait_before_acting``)."""
    drain_timeout: int
    drain_rounds: int
    """The group's ``drain_timeout`` and the drain loop's bound from it."""
    gpu: str = ""
    """The PCI bus id of the GPU to reset (``nodemedic.health.gpu_reset``); empty unless
    ``action`` is ``reset``."""
    devices: tuple[str, ...] | None = None
    """What the drain frees (``gpu``, by its bus id, for a reset: only the pods the Node's
    device record names as its holders); None: every pod."""
    reset_since: int = 0
    """A GPU reset since then (epoch seconds, ``escalation_window`` ago) makes this one a
    reboot (``ledger.RESET_FRESH``)."""
    approval: bool = False
    """A person answers before the action (the group's ``approval`` asks for it)."""
    approval_timeout: int = 14400
    approval_timeout_default: str = "hold"
    """The group's: how long the request waits, and what no answer comes to."""
    substrate: str = "none"
    """Who repairs the node (``Substrate``): the ledger, the mail and ``history`` name it."""
    hand_off: bool = False
    """Kept cordoned, not replaced: reserved capacity (``nodemedic.remediate.target``)."""

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


def rounds(seconds: int, poll_seconds: int) -> int:
    """Wait-loop rounds of ``poll_seconds`` that cover ``seconds``."""
    return max(1, math.ceil(seconds / poll_seconds))


def drain_rounds(drain_timeout: int, poll_seconds: int) -> int:
    """Drain rounds before the remediation gives up: the eviction phase, then as long again
    for the forced deletions the kube ``drain`` op makes after ``drain_timeout`` to finish."""
    return 2 * rounds(drain_timeout, poll_seconds) + 2


def max_drain_wait(poll_seconds: int) -> int:
    return poll_seconds * MAX_BACKOFF


def drain_settle(poll_seconds: int) -> int:
    """How long a drain round waits for the pods it evicted to go before it reports. Pods
    that stop at once (most do, unless they checkpoint on SIGTERM) are then seen gone in
    the same round instead of a whole poll later; the round never waits longer than the
    state machine would before looking again."""
    return min(poll_seconds, MAX_DRAIN_SETTLE)


def execution_timeout(
    *,
    breaker_hold: int,
    drain_timeout: int,
    reboot_timeout: int,
    poll_seconds: int,
    fleet_settle: int = 0,
    refill: bool = False,
    approval: int = 0,
    wait_before_acting: int = 0,
) -> int:
    """An upper bound of one remediation's duration: every wait loop at its longest (the
    reboot watch and the wait for termination both bounded by ``reboot_timeout``, the wait
    for a lock being given back by ``LOCK_WAIT_ROUNDS``, the wait for a fault's fleet window
    to settle by ``fleet_settle``, the wait for a person's approval by ``approval``), plus
    time for the tasks between waits. The in-flight lock expires after this long, so an
    execution stopped by hand does not block its node forever."""
    waits = (
        rounds(breaker_hold, poll_seconds) * poll_seconds
        + drain_rounds(drain_timeout, poll_seconds)
        * (max_drain_wait(poll_seconds) + drain_settle(poll_seconds))
        + 2 * (rounds(reboot_timeout, poll_seconds) + 1) * poll_seconds
        + LOCK_WAIT_ROUNDS * poll_seconds
        + fleet_settle
        + wait_before_acting
        # A group with spares also waits, as long at most, for the refill to join.
        + (rounds(reboot_timeout, poll_seconds) + 1) * poll_seconds * refill
        + approval
    )
    return waits + 600


def parse_time(value: str, field: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"{field} is not an ISO 8601 time: {value!r}") from exc
    if parsed.tzinfo is None:
        raise PolicyError(f"{field} has no time zone: {value!r}")
    return parsed


def elapsed(since: str, until: str) -> float:
    return round((parse_time(until, "until") - parse_time(since, "since")).total_seconds(), 3)


def clock(at: str) -> dict[str, int]:
    """``at`` in epoch seconds, and the end of a parked lock's lease from then
    (``parking.LEASE_SECONDS``): the ledger's expiries are epoch seconds, which a condition
    compares as numbers, and States Language has no conversion from its ISO times."""
    now = int(parse_time(at, "at").timestamp())
    return {"epoch": now, "lease_until": now + parking.LEASE_SECONDS}


def _unmanaged(group: Group | None, policy: Policy) -> str:
    """Why a node is outside what nodemedic may act on."""
    if group is None:
        return "the instance is in no Auto Scaling group"
    if not policy.node_groups:
        return "no node_groups configured: nodemedic acts on no group"
    return f"node group {group.name} is not in node_groups"


def _mode(
    action: str, group: Group | None, policy: Policy, substrate: str
) -> tuple[Mode, str, str]:
    """(mode, outcome, reason) before escalation is considered. A node of another substrate
    than Auto Scaling was found only in what its settings list (the state machine looks
    nowhere else), so it is managed."""
    if action == "notify":
        return "notify", "notified", "the fault says nothing against the node"
    listed = substrate not in ("autoscaling", "none")
    if not listed and (group is None or group.name not in policy.node_groups):
        return "monitor", "unmanaged", _unmanaged(group, policy)
    if policy.recovery_mode == "None":
        return "monitor", "monitored", "recovery_mode is None: label and condition only"
    if policy.recovery_mode != "Automatic":
        raise PolicyError(f"recovery_mode must be Automatic or None, not {policy.recovery_mode!r}")
    if policy.dry_run:
        return (
            "monitor",
            "dry-run",
            f"dry run: would cordon, drain and {action} the node; label and condition only",
        )
    return "act", "", f"{action} (policy: Automatic)"


def overridden(decision: Mapping[str, Any], policy: Policy) -> tuple[str, str] | None:
    """(key, action) of ``policy.actions`` that names the decision's rule or else its
    component; None where none does, and for decisions no setting may change: a notify-only
    one (the catalog's, or the classifier's for evidence it cannot trust) must not be made
    to act, a manual request keeps what the person asked for, and a planned one what AWS's
    notice calls for (the instance goes whatever is done to it)."""
    if decision.get("action") == "notify" or decision.get("source") in UNCHANGED_SOURCES:
        return None
    actions = dict(policy.actions)
    for key in (decision.get("fault_id"), decision.get("component")):
        if isinstance(key, str) and key in actions:
            return key, actions[key]
    return None


def plan(
    decision: Mapping[str, Any],
    group: Group | None,
    last_reboot_at: datetime | None,
    now: datetime,
    policy: Policy,
    *,
    instance_type: str | None = None,
    target: Target | None = None,
) -> Plan:
    """What to do about ``decision`` now: its action, escalated to a replacement when the
    ledger's escalation rule says a reboot would not help, then capped to what the node's
    ``target`` allows (None: its Auto Scaling group's, or none). A GPU reset is a reboot where
    ``instance_type`` (None: not known) cannot reset one GPU in place
    (``nodemedic.health.instance_types.gpu_reset_of``) or the fault's line names no GPU; a
    reboot so reached escalates like any other. A second reset of the same GPU within
    ``escalation_window`` is the state machine's to refuse (``reset_since``)."""
    action = decision.get("action")
    if action not in ACTIONS:
        raise PolicyError(f"decision action must be one of {', '.join(ACTIONS)}, not {action!r}")
    health_status = str(decision.get("health_status") or "")
    if not health_status:
        raise PolicyError("decision has no health_status")
    escalated = False
    reason_prefix = ""
    chosen = overridden(decision, policy)
    if chosen is not None and chosen[1] != action:
        key, action = chosen
        health_status = STATUS_OF_ACTION[action]
        reason_prefix = f"{decision['action']} made {action} by the setting actions[{key!r}]; "
    gpu = gpu_of(str(decision.get("evidence_line") or "")) if action == "reset" else None
    if action == "reset" and gpu_reset_of(instance_type or "") != "one":
        action, health_status = "reboot", STATUS_OF_ACTION["reboot"]
        reason_prefix = f"instance type {instance_type or 'unknown'} cannot reset one GPU; "
    elif action == "reset" and gpu is None:
        action, health_status = "reboot", STATUS_OF_ACTION["reboot"]
        reason_prefix = "the fault's line names no GPU to reset; "
    since = reboot_escalates(last_reboot_at, now, policy.escalation_window)
    if action == "reboot" and since is not None:
        action, health_status, escalated = "replace", REPLACEMENT_STATUS, True
        reason_prefix = (
            f"rebooted for this fault {int(since)} s ago "
            f"(escalation_window {policy.escalation_window} s); "
        )
    own = target or Target("autoscaling" if group is not None else "none")
    capped = cap(action, own, auto_mode_reboot=policy.auto_mode_reboot)
    if capped.action != action:
        action, health_status = capped.action, STATUS_OF_ACTION[capped.action]
    reason_prefix += capped.reason
    mode, outcome, reason = _mode(action, group, policy, own.substrate)
    outcome = capped.outcome or outcome
    if mode == "monitor" and decision.get("source") == MANUAL_SOURCE:
        # A person asked for the action itself: a label and a condition would only pretend
        # to answer. Refused and mailed instead, the node untouched (docs/security.md).
        mode, outcome = "notify", REFUSED
        reason = f"manual {action} refused: {reason}; nodemedic acts by hand only where it acts"
    limit = (
        admission_limit(group.size, policy.max_unhealthy_percent, policy.max_parallel)
        if group is not None
        else 1
    )
    now_epoch = int(now.timestamp())
    return Plan(
        mode=mode,
        action=action,
        health_status=health_status,
        escalated=escalated,
        reason=reason_prefix + reason,
        outcome=outcome,
        limit=limit,
        now_epoch=now_epoch,
        lock_expires_epoch=now_epoch + policy.lock_seconds,
        force_drain=policy.force_drain and action == "replace",
        purge_at=now_epoch + policy.history_days * 86400,
        max_parallel=policy.max_parallel,
        max_unhealthy_percent=policy.max_unhealthy_percent,
        wait_before_acting=policy.wait_before_acting,
        drain_timeout=policy.drain_timeout,
        drain_rounds=policy.drain_rounds,
        gpu=(gpu or "") if action == "reset" else "",
        devices=(gpu,) if action == "reset" and gpu else None,
        reset_since=now_epoch - policy.escalation_window,
        approval=mode == "act"
        and approval.asks(
            policy.approval, action, replaceable=decision.get("replaceable") is not False
        ),
        approval_timeout=policy.approval_timeout,
        approval_timeout_default=policy.approval_timeout_default,
        substrate=own.substrate,
        hand_off=capped.hand_off,
    )
