"""The ledger table in memory, written the way the state machine writes it: each operation
is the key, condition and update a task of ``stacks/remediation/`` sends, taken from
``nodemedic.remediate.ledger`` and evaluated by ``nodemedic.remediate.expressions``. A write
whose condition fails changes nothing and returns False, as DynamoDB's
ConditionalCheckFailedException would."""

from __future__ import annotations

from console.backtest.ledger import Key, Store
from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK
from nodemedic.remediate import ledger, parking
from nodemedic.remediate.expressions import Update


class MemoryLedger(Store):
    """The ledger with the state machine's operations by name."""

    # The node lock ----------------------------------------------------------------------

    def take_lock(
        self,
        instance: str,
        decision_id: str,
        fault_id: str,
        now: int,
        expires_at: int,
        *,
        action: str = "reboot",
    ) -> bool:
        """ "Take node lock"."""
        attributes = ledger.lock_item(decision_id, fault_id, action, "since", expires_at)
        return self.put((instance, LOCK_SK), attributes, ledger.LOCK_FREE, {":now": now})

    def note_reboot(self, instance: str, now: str) -> bool:
        """ "Note reboot on lock": False when a flag on the lock stops the reboot."""
        return self._unflagged(instance, ledger.NOTE_REBOOT, now)

    def give_back(self, instance: str, now: str) -> bool:
        """ "Note give-back on lock": False when a flag on the lock stops the give-back."""
        return self._unflagged(instance, ledger.GIVE_BACK, now)

    def _unflagged(self, instance: str, change: Update, now: str) -> bool:
        return self.update((instance, LOCK_SK), change, ledger.UNFLAGGED, {":now": now})

    def flag_recurrence(self, instance: str, decision_id: str, fault_id: str, now: str) -> bool:
        """ "Flag recurrence", by a decision that found the lock taken."""
        values = {":now": now, ":me": decision_id, ":fault": fault_id}
        return self.update((instance, LOCK_SK), ledger.FLAG_RECURRENCE, ledger.RECURRENCE, values)

    def recurred(self, instance: str) -> bool:
        """ "Fault recurred?" on what "Read recurrence" reads."""
        return ledger.RECURRED_AT in self.item((instance, LOCK_SK))

    def flag_upgrade(
        self, instance: str, decision_id: str, action: str, fault_id: str, now: str
    ) -> bool:
        """ "Stronger?", then "Flag upgrade", by an acting decision that found the lock taken."""
        if action != ledger.UPGRADED_TO:
            return False
        values = {
            ":now": now,
            ":me": decision_id,
            ":fault": fault_id,
            ":weaker": ledger.UPGRADED_FROM,
        }
        return self.update((instance, LOCK_SK), ledger.FLAG_UPGRADE, ledger.UPGRADABLE, values)

    def release_lock(self, instance: str, decision_id: str) -> bool:
        """ "... release lock"."""
        return self.delete((instance, LOCK_SK), ledger.LOCK_HELD_BY, {":me": decision_id})

    # The breaker --------------------------------------------------------------------------

    @staticmethod
    def breaker(group: str) -> Key:
        return (ledger.BREAKER_PK.format(group), BREAKER_SK)

    def holders(self, group: str) -> int:
        """Nodes of the group in remediation, as "... holders left?" counts them."""
        return len(self.item(self.breaker(group)).get(ledger.HOLDERS, ()))

    def admit(self, group: str, instance: str, limit: int, now: str) -> bool:
        """ "Admit"."""
        values = {":me": frozenset({instance}), ":instance": instance, ":now": now, ":limit": limit}
        return self.update(self.breaker(group), ledger.ADMIT, ledger.ADMISSIBLE, values)

    def release_slot(self, group: str, instance: str, now: str) -> int:
        """ "... release slot", then the count the gauge publishes."""
        values = {":me": frozenset({instance}), ":now": now}
        self.update(self.breaker(group), ledger.RELEASE, None, values)
        return self.holders(group)

    def sweep(self, group: str, now: int) -> None:
        """ "Sweep stale holders": per holder, the transaction of "Remove stale holder"."""
        for holder in sorted(self.item(self.breaker(group)).get(ledger.HOLDERS, ())):
            if self.holds((holder, LOCK_SK), ledger.STALE, {":now": now}):
                self.update(
                    self.breaker(group), ledger.SWEEP, None, {":holder": frozenset({holder})}
                )

    # A failed remediation's parked lock (nodemedic.remediate.parking) --------------------

    def park(
        self, group: str, instance: str, decision_id: str, *, step: str, now: str, until: int
    ) -> bool:
        """ "Park node": the failure's own lock parked, its node counted on the breaker."""
        lock = {":me": decision_id, ":now": now, ":step": step, ":group": group, ":until": until}
        return self.transact(
            [
                ((instance, LOCK_SK), parking.PARK, ledger.LOCK_HELD_BY, lock),
                (self.breaker(group), parking.COUNT, None, {":holder": frozenset({instance})}),
            ]
        )

    def renew(self, instance: str, until: int) -> bool:
        """The reconcile's "Renew lease", on the breaker the parked lock names."""
        group = self.item((instance, LOCK_SK)).get("node_group", "")
        return self.transact(
            [
                ((instance, LOCK_SK), parking.RENEW, parking.PARKED, {":until": until}),
                (self.breaker(group), parking.COUNT, None, {":holder": frozenset({instance})}),
            ]
        )
