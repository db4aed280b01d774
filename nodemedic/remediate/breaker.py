"""The cluster's breaker: a cap on remediations in flight across node groups, rate limits on
the reboots and replacements started per group, and a tripped state that holds every
further reboot or replacement of the cluster until a cooldown has passed.

The group's slots (``ledger.ADMISSIBLE``) pace a group; these limits stop a wave. A
remediation is admitted by one transaction over four items: the group's slots, the
cluster's breaker (``CLUSTER_ADMISSIBLE``: not tripped, or cooled down, and under the cap)
and the two rate windows of its action (``RATE_ROOM``: the clock hour and the UTC day). A
refused transaction is judged (``judge``): a limit hit trips the breaker (``TRIP``, whose
condition makes the page go out once per trip), a tripped breaker still cooling holds the
decision, anything else is the group's own pacing.

The tripped state is per cluster, not per group: a wave that exhausts one group's rate is
usually a cluster-wide cause (a driver or AMI rollout, a job), and one state is what an
operator checks and resets (``nodemedic breaker``). It recovers by itself: the first
admission after ``breaker_cooldown`` whose limits all have room closes it again
(``CLUSTER_ADMIT`` removes the tripped state); one that still finds a limit hit extends the
cooldown (``EXTEND``) without paging again.

Rates count decisions (a set of decision ids per window), so a retried admission or a
redelivered decision is counted once. Windows are fixed (clock hour, UTC day): across a
window boundary up to twice a limit may start within one sliding hour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

from nodemedic.contracts.ledger import BREAKER_SK, RATE_SK_PREFIX, cluster_pk
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.expressions import (
    add_members,
    assign,
    compare,
    contains,
    either,
    every,
    missing,
    present,
    remove,
    smaller_than,
    update,
)
from nodemedic.remediate.ledger import ADMISSIBLE, HOLDERS

CLUSTER_PK: Final = cluster_pk("{}")
CLUSTER_SK: Final = BREAKER_SK
RATE_SK: Final = RATE_SK_PREFIX + "{}#{}#{}"
"""``rate#<group>#<action>#<window>``, the window an hour (``2025-01-31T13``) or a day."""
TRIPPED_AT: Final = "tripped_at"
COOLED_UNTIL: Final = "cooled_until"
TRIP_REASON: Final = "trip_reason"
STARTED: Final = "started"
"""A rate window's decision ids."""
RATED_ACTIONS: Final = ("reset", "reboot", "replace")

COOLED: Final = either(missing(TRIPPED_AT), compare(COOLED_UNTIL, "<", ":now"))
"""Not tripped, or its cooldown is over (``:now`` in epoch seconds)."""
CLUSTER_ADMISSIBLE: Final = every(COOLED, ADMISSIBLE)
"""Admit on the cluster's breaker: cooled, and under the cap (``:limit``) or a retry."""
CLUSTER_ADMIT: Final = update(
    add_members(HOLDERS, ":me"), remove(TRIPPED_AT), remove(COOLED_UNTIL), remove(TRIP_REASON)
)
"""Take a cluster slot; an admission that got in closes a breaker whose cooldown is over."""
RATE_ROOM: Final = either(
    missing(STARTED), smaller_than(STARTED, ":limit"), contains(STARTED, ":decision")
)
"""The window has room under ``:limit``, or already counts this decision (a retry)."""
COUNT_START: Final = update(add_members(STARTED, ":decisions"))
NOT_TRIPPED: Final = missing(TRIPPED_AT)
TRIP: Final = update(
    assign(TRIPPED_AT, ":now"), assign(COOLED_UNTIL, ":until"), assign(TRIP_REASON, ":reason")
)
"""Under ``NOT_TRIPPED``: only the decision that trips the breaker pages."""
EXTEND: Final = update(assign(COOLED_UNTIL, ":until"), assign(TRIP_REASON, ":reason"))
"""Under ``TRIPPED``: a limit still hit after the cooldown keeps the breaker tripped."""
TRIPPED: Final = present(TRIPPED_AT)
RESET: Final = update(remove(TRIPPED_AT), remove(COOLED_UNTIL), remove(TRIP_REASON))
"""The operator's reset (``nodemedic breaker reset``)."""

Verdict = Literal["trip", "tripped", "paced"]


@dataclass(frozen=True)
class Limits:
    """The cluster's breaker settings (``ClusterSettings``)."""

    max_in_flight: int
    reboots_per_hour: int
    reboots_per_day: int
    replacements_per_hour: int
    replacements_per_day: int
    cooldown: int

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Limits:
        try:
            limits = cls(**{name: int(raw[name]) for name in cls.__dataclass_fields__})
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyError(f"bad breaker limits: {exc!r}") from exc
        if min(vars(limits).values()) < 1:
            raise PolicyError(f"breaker limits must be at least 1: {limits}")
        return limits

    def rate(self, action: str) -> tuple[int, int]:
        """(per hour, per day) for ``action``."""
        # A GPU reset takes the node out as a reboot does, and may end in one.
        if action in ("reset", "reboot"):
            return self.reboots_per_hour, self.reboots_per_day
        if action == "replace":
            return self.replacements_per_hour, self.replacements_per_day
        raise PolicyError(f"no rate limit for action {action!r}: {', '.join(RATED_ACTIONS)}")


def windows(epoch: int) -> tuple[str, str]:
    """(hour, day) windows of the time ``epoch``, as the rate items' keys name them."""
    at = datetime.fromtimestamp(epoch, UTC)
    return at.strftime("%Y-%m-%dT%H"), at.strftime("%Y-%m-%d")


def admission(epoch: int, action: str, limits: Limits) -> dict[str, Any]:
    """What one admission attempt needs that States Language cannot compute: the windows
    of now, the action's limits, and the end of a cooldown starting now."""
    hourly, daily = limits.rate(action)
    hour, day = windows(epoch)
    return {
        "epoch": epoch,
        "hour": hour,
        "day": day,
        "until": epoch + limits.cooldown,
        "hourly": hourly,
        "daily": daily,
        "cap": limits.max_in_flight,
    }


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge(
    breaker: Mapping[str, Any],
    started: tuple[frozenset[str], frozenset[str]],
    *,
    instance: str,
    decision: str,
    action: str,
    group: str,
    now: int,
    limits: Limits,
) -> Judgement:
    """Why an admission was refused, from the cluster's breaker item and the decisions the
    hour and day windows counted (plain values): which limit trips the breaker, whether it
    is tripped and cooling, or neither (the group's slots are full: paced, not tripped)."""
    if TRIPPED_AT in breaker and float(breaker.get(COOLED_UNTIL, 0)) >= now:
        return Judgement(
            "tripped",
            f"breaker tripped at {_iso(float(breaker[TRIPPED_AT]))} "
            f"({breaker.get(TRIP_REASON, 'no reason recorded')}); cooling down until "
            f"{_iso(float(breaker[COOLED_UNTIL]))}",
        )
    holders = frozenset(breaker.get(HOLDERS, frozenset()))
    if instance not in holders and len(holders) >= limits.max_in_flight:
        return Judgement(
            "trip",
            f"{len(holders)} nodes of the cluster in remediation or left out "
            f"(max_in_flight {limits.max_in_flight})",
        )
    for window, counted, limit in zip(("hour", "day"), started, limits.rate(action), strict=True):
        if decision not in counted and len(counted) >= limit:
            return Judgement(
                "trip",
                f"{len(counted)} {action}s started in group {group} this {window} "
                f"({action} limit {limit} per {window})",
            )
    return Judgement("paced", f"no free slot in group {group}")


def plain_item(item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A DynamoDB item in its wire shape as plain values: numbers, strings, string sets."""
    plain: dict[str, Any] = {}
    for name, value in item.items():
        ((kind, raw),) = value.items()
        plain[name] = float(raw) if kind == "N" else frozenset(raw) if kind == "SS" else raw
    return plain


def state_of(breaker: Mapping[str, Any], now: int) -> str:
    """``closed``, ``tripped`` (cooling down) or ``cooled`` (the next admission with room
    closes it), as ``nodemedic breaker status`` reports it."""
    if TRIPPED_AT not in breaker:
        return "closed"
    return "tripped" if float(breaker.get(COOLED_UNTIL, 0)) >= now else "cooled"
