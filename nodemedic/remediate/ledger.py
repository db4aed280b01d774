"""The ledger's rules: the node lock, the breaker and escalation, each stated once.

The state machine (``stacks/remediation/``) renders its DynamoDB tasks from what is here:
the keys, the condition and update expressions and the arithmetic. The expressions are
``nodemedic.remediate.expressions`` values, so the unit tests evaluate the very rules the
tasks send, on an in-memory ledger, without AWS.

Items (partition ``pk``, sort ``sk``; ``nodemedic.contracts`` names the keys):

- ``<instance-id>`` / ``decision#<decision_id>``: one remediation, its state and timings.
- ``<instance-id>`` / ``inflight``: the node lock. One remediation per node: a second
  decision for a node in flight is a duplicate, unless it upgrades the remediation there.
- ``<instance-id>`` / ``reboot#<fault_id>``: the last reboot for a fault (escalation).
- ``<instance-id>`` / ``reset#<pci bus id>``: the last reset of a GPU (escalation).
- ``group#<asg>`` / ``breaker``: the breaker's ``holders``, the instances of the group in
  remediation; at most the admission limit of them at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, TypeVar

from nodemedic.contracts.ledger import (
    DECISION_SK_PREFIX,
    REBOOT_SK_PREFIX,
    RESET_SK_PREFIX,
    group_pk,
)
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.expressions import (
    Update,
    add_members,
    assign,
    compare,
    contains,
    delete_members,
    either,
    every,
    missing,
    present,
    smaller_than,
    update,
)

V = TypeVar("V")

# Keys: ``{}`` stands for the instance, decision, fault or group, so that the state
# machine fills it with ``States.Format`` and Python with ``str.format``.
RECORD_SK: Final = DECISION_SK_PREFIX + "{}"
REBOOT_SK: Final = REBOOT_SK_PREFIX + "{}"
RESET_SK: Final = RESET_SK_PREFIX + "{}"
BREAKER_PK: Final = group_pk("{}")


def key(pk: V, sk: V) -> dict[str, V]:
    return {"pk": pk, "sk": sk}


# The node lock -----------------------------------------------------------------------------

EXPIRES_AT: Final = "expires_at"
PLANNED_ACTION: Final = "planned_action"
REBOOTED_AT: Final = "rebooted_at"
RECURRED_AT: Final = "recurred_at"
UPGRADED_AT: Final = "upgraded_at"
UPGRADED_BY: Final = "upgraded_by"
UPGRADE_FAULT: Final = "upgrade_fault"
GIVING_BACK_AT: Final = "giving_back_at"


def lock_item(decision_id: V, fault_id: V, action: V, since: V, expires_at: V) -> dict[str, V]:
    """The lock's attributes besides its key. ``expires_at`` (epoch seconds) bounds it: a
    live remediation never runs longer (policy.execution_timeout), so an expired lock is
    one whose execution was stopped. ``action``, what the remediation will do to the node,
    is what a stronger decision upgrades (``UPGRADABLE``)."""
    return {
        "decision_id": decision_id,
        "fault_id": fault_id,
        PLANNED_ACTION: action,
        "since": since,
        EXPIRES_AT: expires_at,
    }


LOCK_FREE: Final = either(missing("pk"), compare(EXPIRES_AT, "<", ":now"))
"""The lock may be taken (``:now`` in epoch seconds): nobody holds it, or its lease ran out."""
LOCK_HELD_BY: Final = compare("decision_id", "=", ":me")
"""Only the decision that took the lock releases it: a duplicate must not free its node."""
NOTE_REBOOT: Final = update(assign(REBOOTED_AT, ":now"))
"""The lock remembers that its remediation rebooted the node, for ``RECURRENCE``. Sent on
``UNFLAGGED``: the reboot happens only if no stronger decision upgraded the remediation."""
GIVE_BACK: Final = update(assign(GIVING_BACK_AT, ":now"))
"""The rebooted node is about to be given back (cleared, uncordoned). Sent on
``UNFLAGGED``; once it is there, neither flag lands any more (``RECURRENCE``,
``UPGRADABLE``): a flag is honoured, or refused to the decision that sends it."""

# Escalation --------------------------------------------------------------------------------

RECURRENCE: Final = every(
    compare("fault_id", "=", ":fault"),
    present(REBOOTED_AT),
    compare("decision_id", "<>", ":me"),
    missing(GIVING_BACK_AT),
)
"""A new decision ``:me`` finds the lock held by a remediation that rebooted the node for
the same fault ``:fault`` and is not giving it back yet: the reboot did not help."""
FLAG_RECURRENCE: Final = update(assign(RECURRED_AT, ":now"), assign("recurred_by", ":me"))
"""What the duplicate leaves on the lock: once the node is back, the remediation that holds
it sees ``RECURRED_AT`` and replaces the node instead of giving it back."""

UPGRADED_FROM: Final = "reboot"
UPGRADED_TO: Final = "replace"
"""A decision to replace the node upgrades a remediation in flight that will reboot it: the
reboot would not cure the stronger fault. Nothing is stronger than a replacement, and a
weaker or equal decision is a duplicate."""
UPGRADABLE: Final = every(
    compare(PLANNED_ACTION, "=", ":weaker"),
    missing(UPGRADED_AT),
    missing(GIVING_BACK_AT),
)
"""The remediation holding the lock will do ``:weaker`` (``UPGRADED_FROM``), nobody upgraded
it yet, and it is not giving the node back: it will still read the flag."""
FLAG_UPGRADE: Final = update(
    assign(UPGRADED_AT, ":now"), assign(UPGRADED_BY, ":me"), assign(UPGRADE_FAULT, ":fault")
)
"""What the stronger decision ``:me`` (fault ``:fault``) leaves on the lock: the remediation
holding it replaces the node instead of rebooting it, or, rebooted already, instead of
giving it back."""
UNFLAGGED: Final = every(missing(UPGRADED_AT), missing(RECURRED_AT))
"""Nothing asks the remediation holding the lock to escalate: it may reboot the node, and
give it back after the reboot."""


def reboot_escalates(last_reboot_at: datetime | None, now: datetime, window: int) -> float | None:
    """Seconds since the last reboot for the same fault when that was under ``window``
    seconds ago: rebooting again would not help, the decision becomes a replacement."""
    if last_reboot_at is None:
        return None
    since = (now - last_reboot_at).total_seconds()
    return since if since < window else None


RESET_AT: Final = "reset_at"
RESET_FRESH: Final = either(missing(RESET_AT), compare(RESET_AT, "<", ":since"))
"""The GPU was not reset since ``:since`` (epoch seconds, ``escalation_window`` ago): a
reset may help. A second reset within the window would not: the node is rebooted."""
NOTE_RESET: Final = update(assign(RESET_AT, ":now"), assign("decision_id", ":me"))
"""The reset marker, written on ``RESET_FRESH`` before the reset is sent."""


def reboot_item(at: V, decision_id: V) -> dict[str, V]:
    """The reboot marker's attributes besides its key; ``at`` is what escalation reads."""
    return {"at": at, "decision_id": decision_id}


# The breaker -------------------------------------------------------------------------------

HOLDERS: Final = "holders"


def admission_limit(size: int, max_unhealthy_percent: int, max_parallel: int) -> int:
    """How many remediations of a group may be in flight before a new one is held.

    A new one is held when ``in_flight * 100 > max_unhealthy_percent * size`` or
    ``in_flight >= max_parallel``: the first admits while ``in_flight`` is at most
    ``floor(pct * size / 100)``. Always at least 1, so a small group can still heal one
    node at a time instead of never.
    """
    if size < 0 or max_parallel < 1 or not 0 <= max_unhealthy_percent <= 100:
        raise PolicyError(
            f"bad breaker settings: size={size} max_parallel={max_parallel} "
            f"max_unhealthy_percent={max_unhealthy_percent}"
        )
    return min(max_parallel, max_unhealthy_percent * size // 100 + 1)


ADMISSIBLE: Final = either(
    missing(HOLDERS), smaller_than(HOLDERS, ":limit"), contains(HOLDERS, ":instance")
)
"""A slot is free under ``:limit``; an instance already holding one is admitted again, so a
retried admission is idempotent."""
ADMIT: Final = update(
    add_members(HOLDERS, ":me"),
    assign("updated_at", ":now"),
    assign("limit", ":limit"),
    aliased=("limit",),
)
RELEASE: Final = update(delete_members(HOLDERS, ":me"), assign("updated_at", ":now"))
"""Gives the slot back. The last holder's release removes ``holders`` altogether (DynamoDB
drops an emptied set): whoever counts the holders must read no attribute as none."""
STALE: Final = LOCK_FREE
"""A holder is stale when its node lock is free: a live holder always holds its lock (the
slot is taken after the lock and given back before it), so a free lock means its execution
is gone. The sweep checks this on the holder's lock and removes the holder in one
transaction, only while it is true."""
SWEEP: Final = update(delete_members(HOLDERS, ":holder"))
SWEEP_SECONDS: Final = 60
"""How often a held decision sweeps the breaker's stale holders. A holder is stale only once
its node lock has expired, hours after its execution began, so a minute more is nothing;
sweeping every round would cost a read and a transaction per holder each poll."""


# Decision records --------------------------------------------------------------------------


def record_update(*attributes: str) -> Update:
    """``SET`` each attribute of a decision record to the placeholder of its name; every
    name aliased, since a record's fields (``state``, ...) include reserved words."""
    return update(*(assign(a, f":{a}") for a in attributes), aliased=attributes)
