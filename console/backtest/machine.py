"""The remediation state machine's rules, run on an in-memory ledger in simulated time.

Each remediation is a generator that yields the simulated time (epoch seconds) it waits
for and is resumed then by ``replay``'s clock: no sleep, no wall clock. It steps through the
state machine's phases in their one order (``nodemedic.remediate.phases.PHASES``), one
method each (``STEPS``), and every rule is the one the state machine sends: the ``plan``,
``breaker.judge`` and ``fleet.judge`` functions of the policy Lambda and the ledger's
condition and update expressions, evaluated on ``Store``. What the state machine waits on
outside the ledger (the drain, the reboot itself) takes ``action_seconds``:
docs/backtest.md says so.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from console.backtest.ledger import Key, Store, Write
from console.backtest.run import Outcome, Run, held_for_fleet, iso
from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK
from nodemedic.remediate import breaker, fleet, ledger, phases, quarantine
from nodemedic.remediate.decision import Decision
from nodemedic.remediate.policy import Group, plan
from nodemedic.remediate.target import Target
from nodemedic.settings import ClusterSettings

HOUR = 3600
"""The breaker's shorter rate window (``breaker.windows``: a clock hour)."""
Steps = Generator[int, int, None]
"""A remediation: yields the time it waits for, is sent the time it resumes at."""
Waits = Generator[int, int, "str | None"]
"""A phase that waits, as a remediation does; it returns where it goes on to, as ``Step``."""
Step = Callable[["Machine", "Run"], "Waits | str | None"]
"""One phase: the phase it goes on to (a later one: a held or monitored node goes on to the
report), ``STOP``, or None for the next one."""
STOP: Final = "stop"
"""Where a duplicate goes: the remediation ends at once, with no report, as the state
machine's "Duplicate" does."""


@dataclass
class Machine:
    """One cluster's remediation state machine: its settings and its ledger."""

    settings: ClusterSettings
    group: Group
    action_seconds: int
    target: Target | None = None
    """Who repairs the group's nodes (None: its Auto Scaling group, as the plan takes it)."""
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
        """The remediation of ``decision`` started at ``now``, phase by phase; ``out`` says
        what it did."""
        run = Run(decision, now, out)
        at = 0
        while at < len(phases.PHASES):
            step = STEPS[phases.PHASES[at]](self, run)
            goes_to = (yield from step) if isinstance(step, Generator) else step
            if goes_to == STOP:
                return
            at = at + 1 if goes_to is None else phases.PHASES.index(goes_to)

    def _intake(self, run: Run) -> str | None:
        """Plan; a notify-only plan goes on to the report."""
        decision, out = run.decision, run.out
        last = self.store.item((decision.instance_id, ledger.REBOOT_SK.format(decision.fault_id)))
        at = last.get("at")
        run.planned = plan(
            decision.to_record(),
            self.group,
            None if at is None else datetime.fromtimestamp(at, UTC),
            datetime.fromtimestamp(run.now, UTC),
            self.settings.for_group(self.group.name).policy,
            target=self.target,
        )
        out.would, out.reason = run.planned.action, run.planned.reason
        out.escalated = run.planned.escalated
        if run.planned.mode == "notify":
            out.action = "notify"
            return phases.REPORT
        return None

    def _sight(self, run: Run) -> None:
        if run.planned.mode != "act":
            return
        instance, now = run.decision.instance_id, run.now
        values = {
            ":me": frozenset({instance}),
            ":at": now,
            ":since": now - self.settings.fleet_rules.window,
            ":open": fleet.OPEN,
        }
        key = self._fleet_key(run.decision.fault_id)
        if not self.store.update(key, fleet.JOIN, fleet.IN_WINDOW, values):
            self.store.update(key, fleet.REOPEN, fleet.EXPIRED, values)

    def _lock(self, run: Run) -> str | None:
        """Take the node lock; a monitor-only plan goes on to the report. A decision that
        finds the lock taken flags a recurrence or an upgrade on it, or is a duplicate."""
        decision, planned, now, out = run.decision, run.planned, run.now, run.out
        instance, me = decision.instance_id, decision.decision_id
        lock = (instance, LOCK_SK)
        item = ledger.lock_item(
            me, decision.fault_id, planned.action, iso(now), planned.lock_expires_epoch
        )
        if self.store.put(lock, item, ledger.LOCK_FREE, {":now": now}):
            run.locked = True
            if planned.mode == "monitor":
                out.action = "monitor"
                return phases.REPORT
            return None
        flags = {":now": iso(now), ":me": me, ":fault": decision.fault_id}
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
        return STOP

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

    def _gate(self, run: Run) -> str | None:
        if self._fleet(run.decision.fault_id, run.decision.instance_id, run.now):
            return held_for_fleet(run, "fleet event")
        return None

    def settles_at(self, fault_id: str, now: int) -> int:
        first = int(self.store.item(self._fleet_key(fault_id)).get(fleet.FIRST_AT, now))
        return max(now, first + self.settings.fleet_rules.settle)

    def _quarantine_keys(self, window: str) -> tuple[Key, Key]:
        sk = quarantine.QUARANTINE_SK.format(window)
        return (ledger.BREAKER_PK.format(self.group.name), sk), (
            breaker.CLUSTER_PK.format(self.settings.name),
            sk,
        )

    def _quarantine(self, run: Run) -> None:
        """The quarantine's transaction and trip, on a cluster of the group's nodes alone."""
        decision, rules = run.decision, self.settings.quarantine_rules
        if not (
            rules.group_percent
            and rules.cluster_percent
            and decision.source in quarantine.QUARANTINED_SOURCES
            and run.planned.action in quarantine.QUARANTINED_ACTIONS
        ):
            return
        found = quarantine.limits(self.group.size, self.group.size, run.now, rules)
        keys = self._quarantine_keys(found.window)
        values = {
            ":me": frozenset({decision.instance_id}),
            ":instance": decision.instance_id,
            ":at": iso(run.now),
        }
        if self.store.transact(
            [
                (key, quarantine.JOIN, quarantine.ROOM, {**values, ":limit": limit})
                for key, limit in zip(keys, (found.group, found.cluster), strict=True)
            ]
        ):
            run.out.quarantined_at = run.now
            return
        run.out.quarantine_refused = True
        reason = quarantine.tripped_reason(decision.instance_id, self.group.name, found, rules)
        trip = {":at": iso(run.now), ":reason": reason}
        self.store.update(keys[1], quarantine.TRIP, quarantine.NOT_TRIPPED, trip)

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
        slot = {":me": me, ":instance": instance, ":now": iso(now), ":limit": limit}
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

    def _breaker(self, run: Run) -> Waits:
        """Admission, polled while refused, up to ``breaker_hold``; held that long, the
        decision goes on to the report."""
        decision, planned, out = run.decision, run.planned, run.out
        started, reason = run.now, ""
        refused: tuple[int, int] | None = None
        """The releases at the last refusal, and when time next moves a condition."""
        while True:
            # A poll with no slot given back since, before such a time, would be refused as
            # the last one was: a storm holds many decisions for an hour, so skip the
            # transaction (the reason reported is the last one judged).
            if refused is None or refused[0] != self.releases or run.now >= refused[1]:
                if self._admit(decision, planned.action, run.now, planned.limit):
                    run.admitted = True
                    return None
                reason = self._refused(decision, planned.action, run.now)
                refused = (self.releases, self._changes_at(run.now))
                if not out.trips or out.trips[-1] != reason:
                    out.trips.append(reason)
            run.held = True
            if out.quarantined_at is not None and self._declared(decision.fault_id):
                return held_for_fleet(run, "fleet event; quarantine lifted while held")
            if run.now - started >= self.settings.breaker_hold:
                out.action, out.acted_at, out.reason = "held-breaker", run.now, reason
                return phases.REPORT
            run.now = yield run.now + self.settings.poll_seconds

    def _declared(self, fault_id: str) -> bool:
        return self.store.item(self._fleet_key(fault_id)).get(fleet.VERDICT) == fleet.FLEET

    def _recheck(self, run: Run) -> str | None:
        if run.held and self._declared(run.decision.fault_id):
            return held_for_fleet(run, "fleet event")
        return None

    def _mark(self, run: Run) -> None:
        run.out.cordoned_at = run.now

    def _drain(self, run: Run) -> Waits:
        """The group's ``wait_before_acting``; the drain itself is not simulated: its time
        is in ``action_seconds``, with the action's."""
        if run.planned.wait_before_acting:
            run.now = yield run.now + run.planned.wait_before_acting
        return None

    def _judgement(self, run: Run) -> Waits:
        settled = self.settles_at(run.decision.fault_id, run.now)
        if settled > run.now:
            run.now = yield settled
        if self._fleet(run.decision.fault_id, run.decision.instance_id, run.now):
            return held_for_fleet(run, "fleet event; given back")
        return None

    def _approval(self, run: Run) -> None:
        """A person's answer is no part of the history: the backtest takes it as given at
        once, and says the action would have waited for one."""
        if run.planned.approval:
            run.out.reason += "; asks approval first (assumed given at once)"

    def _reboot_or_replace(self, run: Run) -> Waits:
        """The plan's action, a replacement where a stronger decision upgraded it; a reboot
        escalates to one where the lock was flagged meanwhile."""
        decision, out = run.decision, run.out
        instance, fault_id = decision.instance_id, decision.fault_id
        lock = (instance, LOCK_SK)
        action = run.planned.action
        if ledger.UPGRADED_AT in self.store.item(lock):
            action, out.escalated = "replace", True
        if action == "reboot":
            self.store.update(lock, ledger.NOTE_REBOOT, ledger.UNFLAGGED, {":now": iso(run.now)})
            reboot_key = (instance, ledger.REBOOT_SK.format(fault_id))
            self.store.put(reboot_key, ledger.reboot_item(run.now, decision.decision_id), None, {})
            out.action, out.acted_at = "reboot", run.now
            run.now = yield run.now + self.action_seconds
            if self.store.update(lock, ledger.GIVE_BACK, ledger.UNFLAGGED, {":now": iso(run.now)}):
                return None
            action, out.escalated = "replace", True
        out.action, out.acted_at = action, run.now
        run.now = yield run.now + self.action_seconds
        return None

    def _report(self, run: Run) -> None:
        """Nothing to publish or mail: ``Outcome`` is the report, filled in by the phases."""

    def _release(self, run: Run) -> None:
        """The slots where admitted, then the lock where taken, as the state machine gives
        them back."""
        instance = run.decision.instance_id
        if run.admitted:
            released = {":me": frozenset({instance}), ":now": iso(run.now)}
            for key in (self._breaker_key(), self._cluster_key()):
                self.store.update(key, ledger.RELEASE, None, released)
            self.releases += 1
        if run.locked:
            self.store.delete(
                (instance, LOCK_SK), ledger.LOCK_HELD_BY, {":me": run.decision.decision_id}
            )


STEPS: Final[Mapping[str, Step]] = {
    phases.INTAKE: Machine._intake,
    phases.FLEET_SIGHTING: Machine._sight,
    phases.LOCK: Machine._lock,
    phases.FLEET_GATE: Machine._gate,
    phases.QUARANTINE: Machine._quarantine,
    phases.BREAKER_ADMISSION: Machine._breaker,
    phases.FLEET_RECHECK: Machine._recheck,
    phases.MARK: Machine._mark,
    phases.DRAIN: Machine._drain,
    phases.FLEET_JUDGEMENT: Machine._judgement,
    phases.APPROVAL: Machine._approval,
    phases.REBOOT_OR_REPLACE: Machine._reboot_or_replace,
    phases.REPORT: Machine._report,
    phases.RELEASE: Machine._release,
}
"""Each phase of ``PHASES`` and its step here, and no other."""
