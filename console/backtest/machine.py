"""The remediation state machine's rules, run on an in-memory ledger in simulated time.

Each remediation is a generator that yields the simulated time (epoch seconds) it waits
for and is resumed then by ``replay``'s clock: no sleep, no wall clock. The order of its
steps is ``stacks/remediation``'s (intake's plan, fleet sighting, node lock, fleet gate,
breaker admission with its holds and trips, recheck, the wait for the fleet window to
settle, the fleet judgement, reboot or replace, escalation and upgrade flags, release);
every rule is the one the state machine sends: the ``plan``, ``breaker.judge`` and
``fleet.judge`` functions of the policy Lambda and the ledger's condition and update
expressions, evaluated on ``Store``. What the state machine waits on outside the ledger
(the drain, the reboot itself) takes ``action_seconds``: docs/backtest.md says so.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from console.backtest.ledger import Key, Store, Write
from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK
from nodemedic.remediate import breaker, fleet, ledger
from nodemedic.remediate.decision import Decision
from nodemedic.remediate.policy import Group, Plan, plan
from nodemedic.settings import ClusterSettings

HOUR = 3600
"""The breaker's shorter rate window (``breaker.windows``: a clock hour)."""
Steps = Generator[int, int, None]
"""A remediation: yields the time it waits for, is sent the time it resumes at."""


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
    escalated: bool = False
    trips: list[str] = field(default_factory=list)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Machine:
    """One cluster's remediation state machine: its settings and its ledger."""

    settings: ClusterSettings
    group: Group
    action_seconds: int
    store: Store = field(default_factory=Store)
    releases: int = 0
    """Slots given back so far: besides the clock, only a release lets in a decision the
    breaker refused."""

    def _fleet_key(self, fault_id: str) -> Key:
        return (ledger.BREAKER_PK.format(self.group.name), fleet.FLEET_SK.format(fault_id))

    def _breaker_key(self) -> Key:
        return (ledger.BREAKER_PK.format(self.group.name), BREAKER_SK)

    def _cluster_key(self) -> Key:
        return (breaker.CLUSTER_PK.format(self.settings.name), breaker.CLUSTER_SK)

    def _rate_key(self, action: str, window: str) -> Key:
        return (
            breaker.CLUSTER_PK.format(self.settings.name),
            breaker.RATE_SK.format(self.group.name, action, window),
        )

    def run(self, decision: Decision, now: int, out: Outcome) -> Steps:
        """The remediation of ``decision`` started at ``now``; ``out`` says what it did."""
        instance, fault_id = decision.instance_id, decision.fault_id
        reboot_key = (instance, ledger.REBOOT_SK.format(fault_id))
        last = self.store.item(reboot_key).get("at")
        at = datetime.fromtimestamp(now, UTC)
        planned = plan(
            decision.to_record(),
            self.group,
            None if last is None else datetime.fromtimestamp(last, UTC),
            at,
            self.settings.policy,
        )
        out.would, out.reason, out.escalated = planned.action, planned.reason, planned.escalated
        if planned.mode == "notify":
            out.action = "notify"
            return
        if planned.mode == "act":
            self._sight(fault_id, instance, now)
        if not self._lock(decision, planned, now, out):
            return
        try:
            if planned.mode == "monitor":
                out.action = "monitor"
                return
            yield from self._act(decision, planned, now, out)
        finally:
            self.store.delete(
                (instance, LOCK_SK), ledger.LOCK_HELD_BY, {":me": decision.decision_id}
            )

    def _lock(self, decision: Decision, planned: Plan, now: int, out: Outcome) -> bool:
        """Take the node lock; a decision that finds it taken flags a recurrence or an
        upgrade on it, or is a duplicate."""
        instance, me = decision.instance_id, decision.decision_id
        lock = (instance, LOCK_SK)
        item = ledger.lock_item(
            me, decision.fault_id, planned.action, _iso(now), planned.lock_expires_epoch
        )
        if self.store.put(lock, item, ledger.LOCK_FREE, {":now": now}):
            return True
        flags = {":now": _iso(now), ":me": me, ":fault": decision.fault_id}
        out.acted_at = now
        if self.store.update(lock, ledger.FLAG_RECURRENCE, ledger.RECURRENCE, flags):
            out.action, out.reason = "duplicate", "the fault recurred after the node's reboot"
        elif (
            planned.mode == "act"
            and planned.action == ledger.UPGRADED_TO
            and self.store.update(
                lock, ledger.FLAG_UPGRADE, ledger.UPGRADABLE, {**flags, ":weaker": "reboot"}
            )
        ):
            out.action, out.reason = "upgraded", "the reboot in flight becomes a replacement"
        else:
            out.action, out.reason = "duplicate", "the node is in remediation already"
        return False

    def _sight(self, fault_id: str, instance: str, now: int) -> None:
        values = {
            ":me": frozenset({instance}),
            ":at": now,
            ":since": now - self.settings.fleet_rules.window,
            ":open": fleet.OPEN,
        }
        key = self._fleet_key(fault_id)
        if not self.store.update(key, fleet.JOIN, fleet.IN_WINDOW, values):
            self.store.update(key, fleet.REOPEN, fleet.EXPIRED, values)

    def _fleet(self, fault_id: str, instance: str, now: int) -> bool:
        """Whether the node's fault is a fleet event now (declared by this call if it
        makes it one)."""
        window = self.store.item(self._fleet_key(fault_id))
        seen = fleet.sightings_of({"found": bool(window), **window})
        verdict = fleet.judge(
            seen,
            instance_id=instance,
            fault_id=fault_id,
            group=self.group.name,
            group_size=self.group.size,
            now_epoch=now,
            rules=self.settings.fleet_rules,
        )
        if verdict.fleet:
            values = {":open": fleet.OPEN, ":first": verdict.first_at, ":fleet": fleet.FLEET}
            values |= {":now": now, ":me": instance}
            self.store.update(self._fleet_key(fault_id), fleet.DECLARE, fleet.DECLARABLE, values)
        return verdict.fleet

    def settles_at(self, fault_id: str, now: int) -> int:
        first = int(self.store.item(self._fleet_key(fault_id)).get(fleet.FIRST_AT, now))
        return max(now, first + self.settings.fleet_rules.settle)

    def _admit(self, decision: Decision, action: str, now: int, limit: int) -> bool:
        """The admission transaction: group slot, cluster slot, both rate windows."""
        me, instance = frozenset({decision.instance_id}), decision.instance_id
        clock = breaker.admission(now, action, self.settings.breaker_limits)
        rates: list[Write] = [
            (
                self._rate_key(action, clock[window]),
                breaker.COUNT_START,
                breaker.RATE_ROOM,
                {
                    ":limit": clock[per],
                    ":decision": decision.decision_id,
                    ":decisions": frozenset({decision.decision_id}),
                },
            )
            for window, per in (("hour", "hourly"), ("day", "daily"))
        ]
        slot = {":me": me, ":instance": instance, ":now": _iso(now), ":limit": limit}
        cluster = {":me": me, ":instance": instance, ":now": now, ":limit": clock["cap"]}
        return self.store.transact(
            [
                (self._breaker_key(), ledger.ADMIT, ledger.ADMISSIBLE, slot),
                (self._cluster_key(), breaker.CLUSTER_ADMIT, breaker.CLUSTER_ADMISSIBLE, cluster),
                *rates,
            ]
        )

    def _refused(self, decision: Decision, action: str, now: int) -> str:
        """Judge a refused admission, trip or extend the breaker; the reason."""
        hour, day = breaker.windows(now)
        started = tuple(
            frozenset(self.store.item(self._rate_key(action, w)).get(breaker.STARTED, ()))
            for w in (hour, day)
        )
        found = breaker.judge(
            self.store.item(self._cluster_key()),
            (started[0], started[1]),
            instance=decision.instance_id,
            decision=decision.decision_id,
            action=action,
            group=self.group.name,
            now=now,
            limits=self.settings.breaker_limits,
        )
        if found.verdict == "trip":
            values = {
                ":now": now,
                ":until": now + self.settings.breaker_limits.cooldown,
                ":reason": found.reason,
            }
            if not self.store.update(
                self._cluster_key(), breaker.TRIP, breaker.NOT_TRIPPED, values
            ):
                self.store.update(self._cluster_key(), breaker.EXTEND, breaker.TRIPPED, values)
        return found.reason

    def _changes_at(self, now: int) -> int:
        """The next time an admission's conditions read differently on the same ledger: a
        new rate window (the next hour), or the end of the breaker's cooldown."""
        changes = (now // HOUR + 1) * HOUR
        cluster = self.store.item(self._cluster_key())
        cooled = cluster.get(breaker.COOLED_UNTIL)
        if breaker.TRIPPED_AT in cluster and cooled is not None and cooled >= now:
            changes = min(changes, int(cooled) + 1)
        return changes

    def _act(self, decision: Decision, planned: Plan, now: int, out: Outcome) -> Steps:
        instance, fault_id = decision.instance_id, decision.fault_id
        if self._fleet(fault_id, instance, now):
            out.action, out.acted_at, out.reason = "held-fleet", now, "fleet event"
            return
        started, held, reason = now, False, ""
        refused: tuple[int, int] | None = None
        """The releases at the last refusal, and when time next moves a condition."""
        while True:
            # A poll with no slot given back since, before such a time, would be refused as
            # the last one was: a storm holds many decisions for an hour, so skip the
            # transaction (the reason reported is the last one judged).
            if refused is None or refused[0] != self.releases or now >= refused[1]:
                if self._admit(decision, planned.action, now, planned.limit):
                    break
                reason = self._refused(decision, planned.action, now)
                refused = (self.releases, self._changes_at(now))
                if not out.trips or out.trips[-1] != reason:
                    out.trips.append(reason)
            held = True
            if now - started >= self.settings.breaker_hold:
                out.action, out.acted_at, out.reason = "held-breaker", now, reason
                return
            now = yield now + self.settings.poll_seconds
        try:
            yield from self._admitted(decision, planned, now, out, held=held)
        finally:
            released = {":me": frozenset({instance}), ":now": _iso(now)}
            for key in (self._breaker_key(), self._cluster_key()):
                self.store.update(key, ledger.RELEASE, None, released)
            self.releases += 1

    def _admitted(
        self, decision: Decision, planned: Plan, now: int, out: Outcome, *, held: bool
    ) -> Steps:
        instance, fault_id = decision.instance_id, decision.fault_id
        window = self.store.item(self._fleet_key(fault_id))
        if held and window.get(fleet.VERDICT) == fleet.FLEET:
            out.action, out.acted_at, out.reason = "held-fleet", now, "fleet event"
            return
        out.cordoned_at = now
        settled = self.settles_at(fault_id, now)
        if settled > now:
            now = yield settled
        if self._fleet(fault_id, instance, now):
            out.action, out.acted_at, out.reason = "held-fleet", now, "fleet event; given back"
            return
        lock = (instance, LOCK_SK)
        action = planned.action
        if ledger.UPGRADED_AT in self.store.item(lock):
            action, out.escalated = "replace", True
        if action == "reboot":
            self.store.update(lock, ledger.NOTE_REBOOT, ledger.UNFLAGGED, {":now": _iso(now)})
            reboot_key = (instance, ledger.REBOOT_SK.format(fault_id))
            self.store.put(reboot_key, ledger.reboot_item(now, decision.decision_id), None, {})
            out.action, out.acted_at = "reboot", now
            now = yield now + self.action_seconds
            if self.store.update(lock, ledger.GIVE_BACK, ledger.UNFLAGGED, {":now": _iso(now)}):
                return
            action, out.escalated = "replace", True
        out.action, out.acted_at = action, now
        yield now + self.action_seconds
