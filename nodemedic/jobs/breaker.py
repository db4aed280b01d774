"""The job breaker: whether a verdict may restart (or fail) a job now, or is held.

A log-pipe outage (Fluent Bit or Container Insights stops delivering) silences every job at
once, and every time-driven rule then fires: a naive monitor would restart the whole
cluster's training. A wave of verdicts in one team's namespace (its shared file system, its
bad image) says nothing of another team's jobs. So there are two breakers, one item:

- **per namespace**: at most ``restarts_per_window`` verdicts acted on in any ``window``
  seconds in one namespace; one more trips that namespace's breaker, and only its verdicts
  are held.
- **per cluster**: at most ``cluster_restarts_per_window`` verdicts acted on in any
  ``window`` seconds across the cluster; one more trips the cluster's breaker, which holds
  the verdicts of every namespace that already restarted a job in the window. A namespace's
  first restart in a window is never held by the cap: that reserve of one is what no set of
  namespaces can spend for another, so a tenant with many namespaces of its own cannot hold
  another team's restart by restarting its own jobs. A verdict found by the schedule (no
  line brought it) while the application log group as a whole delivered nothing for
  ``silence`` seconds trips the cluster's breaker too, and that trip holds every namespace,
  reserve or not: the pipe is down, not the jobs. Before the monitor heard any line there is
  no pipe to lose.

A tripped breaker (the first trip of each notifies, once) holds its verdicts for
``cooldown`` seconds; then the first verdict with room closes it, and one that still hits a
limit extends the cooldown quietly, as the node breaker does (``nodemedic.remediate.breaker``).
Decisions are counted by id (job, run, rule, verdict), so a redelivered verdict is counted
once. A held verdict changes nothing on the job but an Event; its rules start over, so a job
that really hangs is found again after the hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

Verdict = Literal["admit", "hold", "trip"]


@dataclass(frozen=True)
class JobLimits:
    """The cluster's job breaker settings (``ClusterSettings.job_limits``)."""

    restarts_per_window: int = 3
    """Per namespace."""
    cluster_restarts_per_window: int = 10
    """Across the cluster: the cap that holds everyone."""
    window: int = 600
    cooldown: int = 1800
    silence: int = 300
    monitor_only: bool = False
    """``recovery_mode: None`` or ``dry_run``: every verdict is held, as every node decision
    is monitor-only there."""

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> JobLimits:
        """The limits the stack hands the monitor (JSON); a bad value is a clear error."""
        known = set(cls.__dataclass_fields__)
        if set(raw) - known:
            raise ValueError(f"unknown job breaker settings: {sorted(set(raw) - known)}")
        numbers = {k: raw[k] for k in known - {"monitor_only"} if k in raw}
        for name, value in numbers.items():
            if type(value) is not int or value < 1:
                raise ValueError(f"job breaker: {name} must be an integer >= 1, got {value!r}")
        monitor_only = raw.get("monitor_only", False)
        if type(monitor_only) is not bool:
            raise ValueError(f"job breaker: monitor_only must be a boolean, got {monitor_only!r}")
        return cls(**numbers, monitor_only=monitor_only)


@dataclass(frozen=True)
class BreakerState:
    """One breaker (the cluster's, or a namespace's)."""

    started: Mapping[str, float] = field(default_factory=dict)
    """Decision id → when it was admitted, within the last window."""
    tripped_at: float | None = None
    cooled_until: float | None = None
    reason: str = ""
    everyone: bool = True
    """The cluster's trip holds every namespace (a silent log group), not only those that
    restarted in the window (its cap). True for an item written before the reserve."""

    def as_item(self) -> dict[str, object]:
        return {
            "started": dict(self.started),
            "tripped_at": self.tripped_at,
            "cooled_until": self.cooled_until,
            "reason": self.reason,
            "everyone": self.everyone,
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> BreakerState:
        return cls(
            started={str(k): float(v) for k, v in (item.get("started") or {}).items()},
            tripped_at=item.get("tripped_at"),
            cooled_until=item.get("cooled_until"),
            reason=str(item.get("reason", "")),
            everyone=bool(item.get("everyone", True)),
        )


@dataclass(frozen=True)
class Breakers:
    """The cluster's breaker and its namespaces' as the ledger keeps them, in one item. An
    item written before namespaces had breakers is the cluster's."""

    cluster: BreakerState = field(default_factory=BreakerState)
    namespaces: Mapping[str, BreakerState] = field(default_factory=dict)

    def as_item(self) -> dict[str, object]:
        namespaces = {name: state.as_item() for name, state in self.namespaces.items()}
        return {**self.cluster.as_item(), "namespaces": namespaces}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Breakers:
        namespaces = item.get("namespaces") or {}
        return cls(
            cluster=BreakerState.from_item(item),
            namespaces={str(k): BreakerState.from_item(v) for k, v in namespaces.items()},
        )


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str
    state: Breakers
    """The breakers after this judgement (unchanged when nothing needs writing)."""
    page: bool = False
    """This judgement tripped a closed breaker: the one notification of the trip."""
    scope: str = ""
    """``cluster`` or ``namespace <name>``: whose breaker held or tripped."""


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge(
    state: Breakers,
    *,
    namespace: str,
    decision: str,
    now: float,
    limits: JobLimits,
    heard_at: float | None,
    by_schedule: bool,
) -> Judgement:
    """Admit the decision (counted in the window of its namespace and of the cluster), hold
    it, or trip the namespace's or the cluster's breaker for it."""
    if limits.monitor_only:
        return Judgement("hold", "monitor-only (recovery_mode None or dry_run)", state)
    cluster, own = state.cluster, state.namespaces.get(namespace, BreakerState())
    in_namespace = _recent(own, now, limits)
    # The namespace's first restart in the window: the cluster's cap never holds it.
    reserve = not in_namespace
    for breaker, scope in ((cluster, "cluster"), (own, f"namespace {namespace}")):
        spared = breaker is cluster and reserve and not breaker.everyone
        if breaker.tripped_at is not None and (breaker.cooled_until or 0) >= now and not spared:
            return Judgement(
                "hold",
                f"job breaker of the {scope} tripped at {_iso(breaker.tripped_at)}"
                f" ({breaker.reason}); holding restarts until {_iso(breaker.cooled_until or now)}",
                state,
                scope=scope,
            )
    if decision in own.started or decision in cluster.started:
        return Judgement("admit", "counted already", state)
    in_cluster = _recent(cluster, now, limits)
    silent = by_schedule and heard_at is not None and now - heard_at > limits.silence
    hit = _limit_hit(namespace, in_cluster, in_namespace, limits=limits, silent=silent)
    counted = {**in_cluster, decision: now}
    own_counted = {**in_namespace, decision: now}
    if hit is None:
        # A reserve admitted while the cap's trip cools keeps it holding the others.
        kept = (
            replace(cluster, started=counted) if _cooling(cluster, now) else BreakerState(counted)
        )
        return Judgement(
            "admit",
            "room in the window",
            _admit(_live(state.namespaces, now, limits), kept, namespace, own_counted),
        )
    whose, reason = hit
    if whose is None and reserve and not silent:
        # The cap is hit: its trip (one page) holds the namespaces that restarted in the
        # window, and this namespace's first restart goes ahead.
        trip = _trip(
            state,
            None,
            replace(cluster, started=counted, everyone=False),
            reason=reason,
            now=now,
            limits=limits,
        )
        admitted = _admit(trip.state.namespaces, trip.state.cluster, namespace, own_counted)
        return replace(
            trip,
            verdict="admit",
            reason=f"{reason}; namespace {namespace}'s first restart in the window",
            state=admitted,
        )
    breaker = replace(cluster, started=in_cluster, everyone=silent)
    if whose is not None:
        breaker = replace(own, started=in_namespace)
    return _trip(state, whose, breaker, reason=reason, now=now, limits=limits)


def _admit(
    namespaces: Mapping[str, BreakerState],
    cluster: BreakerState,
    namespace: str,
    started: Mapping[str, float],
) -> Breakers:
    """The breakers once a decision is admitted: the cluster's ``cluster``, and
    ``namespace``'s counting ``started`` (its admitted decisions in the window)."""
    return Breakers(
        cluster=cluster, namespaces={**namespaces, namespace: BreakerState(started=dict(started))}
    )


def _limit_hit(
    namespace: str,
    in_cluster: Mapping[str, float],
    in_namespace: Mapping[str, float],
    *,
    limits: JobLimits,
    silent: bool,
) -> tuple[str | None, str] | None:
    """(whose breaker trips: the namespace, or None for the cluster's; why), if a limit is
    hit. The cluster's limits first."""
    if silent:
        return None, (
            f"the application log group delivered no line for over {limits.silence} s:"
            " a log pipe outage, not hung jobs"
        )
    if len(in_cluster) >= limits.cluster_restarts_per_window:
        return None, (
            f"{len(in_cluster)} job restarts in the cluster in the last {limits.window} s"
            f" (limit {limits.cluster_restarts_per_window})"
        )
    if len(in_namespace) >= limits.restarts_per_window:
        return namespace, (
            f"{len(in_namespace)} job restarts in namespace {namespace} in the last"
            f" {limits.window} s (limit {limits.restarts_per_window})"
        )
    return None


def _cooling(breaker: BreakerState, now: float) -> bool:
    """Tripped, and still holding."""
    return breaker.tripped_at is not None and (breaker.cooled_until or 0) >= now


def _recent(breaker: BreakerState, now: float, limits: JobLimits) -> dict[str, float]:
    return {d: at for d, at in breaker.started.items() if now - at < limits.window}


def _live(
    namespaces: Mapping[str, BreakerState], now: float, limits: JobLimits
) -> dict[str, BreakerState]:
    """The namespaces' breakers that still count or hold something: the item stays small."""
    return {
        name: breaker
        for name, breaker in namespaces.items()
        if _recent(breaker, now, limits) or (breaker.cooled_until or 0) >= now
    }


def _trip(
    state: Breakers,
    namespace: str | None,
    breaker: BreakerState,
    *,
    reason: str,
    now: float,
    limits: JobLimits,
) -> Judgement:
    """``breaker`` (the cluster's where ``namespace`` is None) tripped, or its trip extended."""
    tripped = replace(
        breaker,
        tripped_at=now if breaker.tripped_at is None else breaker.tripped_at,
        cooled_until=now + limits.cooldown,
        reason=reason,
    )
    namespaces = _live(state.namespaces, now, limits)
    if namespace is None:
        after = Breakers(cluster=tripped, namespaces=namespaces)
    else:
        after = Breakers(cluster=state.cluster, namespaces={**namespaces, namespace: tripped})
    scope = "cluster" if namespace is None else f"namespace {namespace}"
    return Judgement("trip", reason, after, page=breaker.tripped_at is None, scope=scope)
