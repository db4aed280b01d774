"""The job breaker: whether a verdict may restart (or fail) a job now, or is held.

A log-pipe outage (Fluent Bit or Container Insights stops delivering) silences every job at
once, and every time-driven rule then fires: a naive monitor would restart the whole
cluster's training. Two limits stop that, per cluster:

- **silence**: a verdict found by the schedule (no line brought it) is held while the
  application log group as a whole delivered nothing for ``silence`` seconds: the pipe is
  down, not the jobs. Before the monitor heard any line there is no pipe to lose.
- **rate**: at most ``restarts_per_window`` verdicts acted on in any ``window`` seconds;
  one more trips the breaker.

Either trips the breaker (the first trip notifies, once), and a tripped breaker holds every
verdict of the cluster for ``cooldown`` seconds; then the first verdict with room closes
it, and one that still hits a limit extends the cooldown quietly, as the node breaker does
(``nodemedic.remediate.breaker``). Decisions are counted by id (job, run, rule, verdict),
so a redelivered verdict is counted once. A held verdict changes nothing on the job but an
Event; its rules start over, so a job that really hangs is found again after the hold.
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
    """The cluster's job breaker as the ledger keeps it."""

    started: Mapping[str, float] = field(default_factory=dict)
    """Decision id → when it was admitted, within the last window."""
    tripped_at: float | None = None
    cooled_until: float | None = None
    reason: str = ""

    def as_item(self) -> dict[str, object]:
        return {
            "started": dict(self.started),
            "tripped_at": self.tripped_at,
            "cooled_until": self.cooled_until,
            "reason": self.reason,
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> BreakerState:
        return cls(
            started={str(k): float(v) for k, v in (item.get("started") or {}).items()},
            tripped_at=item.get("tripped_at"),
            cooled_until=item.get("cooled_until"),
            reason=str(item.get("reason", "")),
        )


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str
    state: BreakerState
    """The breaker after this judgement (unchanged when nothing needs writing)."""
    page: bool = False
    """This judgement tripped a closed breaker: the one notification of the trip."""


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge(
    state: BreakerState,
    *,
    decision: str,
    now: float,
    limits: JobLimits,
    heard_at: float | None,
    by_schedule: bool,
) -> Judgement:
    """Admit the decision (counted in the window), hold it, or trip the breaker for it."""
    if limits.monitor_only:
        return Judgement("hold", "monitor-only (recovery_mode None or dry_run)", state)
    if state.tripped_at is not None and (state.cooled_until or 0) >= now:
        return Judgement(
            "hold",
            f"job breaker tripped at {_iso(state.tripped_at)} ({state.reason}); holding"
            f" restarts until {_iso(state.cooled_until or now)}",
            state,
        )
    if decision in state.started:
        return Judgement("admit", "counted already", state)
    recent = {d: at for d, at in state.started.items() if now - at < limits.window}
    reason = ""
    if by_schedule and heard_at is not None and now - heard_at > limits.silence:
        reason = (
            f"the application log group delivered no line since {_iso(heard_at)}"
            f" (silence limit {limits.silence} s): a log pipe outage, not hung jobs"
        )
    elif len(recent) >= limits.restarts_per_window:
        reason = (
            f"{len(recent)} job restarts in the last {limits.window} s"
            f" (limit {limits.restarts_per_window})"
        )
    if reason:
        tripped = replace(
            state,
            started=recent,
            tripped_at=now if state.tripped_at is None else state.tripped_at,
            cooled_until=now + limits.cooldown,
            reason=reason,
        )
        return Judgement("trip", reason, tripped, page=state.tripped_at is None)
    admitted = BreakerState(started={**recent, decision: now})
    return Judgement("admit", "room in the window", admitted)
