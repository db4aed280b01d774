"""The deep check's verdicts: a decision of the deep check's stream that is no remediation.

A node registers behind the health-check taint and waits for its deep check. A passed
verdict (``DEEP_CHECK_PASSED_FAULT``) admits the node through the kube ``deep_check`` op
(and lifts the cordon a reboot left for the check, unless a remediation holds the node's
lock) and ends the execution: no lock taken, no breaker, no ledger record and no mail,
since every healthy node of a scale-up passes. A failed one (``DEEP_CHECK_FAILED_FAULT``,
action replace) labels the node ``Failed`` and goes on as any replace decision, through the
plan, the lock and the breaker; one whose origin was not proven arrives capped to notify
and labels nothing. Any other decision, ``NothingChecked`` included (notified, the node
stays tainted), goes straight on.
"""

from __future__ import annotations

from typing import Any, Final

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.logs import (
    DEEP_CHECK_FAILED_FAULT,
    DEEP_CHECK_PASSED_FAULT,
    DEEP_CHECK_SOURCE,
)
from nodemedic.remediate import ledger
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import lock_key

VERDICT: Final = "$.deep_check"
"""The kube ``deep_check`` op's answer: ``{node, changed, uncordoned, kept_cordon, refused}``."""
HOLD: Final = "$.hold"
"""``{release}``: whether a pass may lift the cordon a reboot left for it."""
LOCK: Final = "$.checked_lock"
KEY_BOOT: Final = "$.key_boot"
"""``{boot}``: the boot whose key proved the pass (``Decision.key_boot_id``), null when the
decision does not say (an older classifier's)."""
ADMISSION_RETRIES: Final = 5
"""Retries of a pass's admission, ``poll_seconds`` apart then twice as long each time."""


def _released(flow: Flow, *, then: sfn.IChainable, again: str = "") -> sfn.IChainable:
    """A pass lifts the post-reboot cordon only while no remediation holds the node's lock:
    a fault found since, on its way to the cordon, must not see its node given back. Any
    lock item counts, a parked or expired one too, and so does a read that failed. Except
    a lock whose reboot is giving the node back (``ledger.GIVING_BACK_AT``): no flag lands
    on it any more, so nothing will stop that give-back, and the pass may be the very check
    it holds the node for (arriving between the hold and the lock's release). ``again``
    names the states of a second read apart."""
    s = flow.scope
    keep = flow.put(f"Keep cordon{again}", HOLD, release=False)
    keep.next(then)
    read = flow.read(f"Read checked node's lock{again}", lock_key(), LOCK, guard=False)
    read.add_catch(keep, result_path=sfn.JsonPath.DISCARD)
    read.next(
        sfn.Choice(s, f"Under remediation?{again}")
        .when(
            sfn.Condition.and_(
                sfn.Condition.is_present(f"{LOCK}.Item.{ledger.EXPIRES_AT}"),
                sfn.Condition.is_not_present(f"{LOCK}.Item.{ledger.GIVING_BACK_AT}"),
            ),
            keep,
        )
        .otherwise(flow.put(f"Release hold{again}", HOLD, release=True).next(then))
    )
    return read


def _key_boot(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """The pass's key's boot, for the admission: null where the decision has none, since a
    path to a field the input lacks would stop the execution (``OPTIONAL_FIELDS``)."""
    named = flow.put(
        "Key's boot", KEY_BOOT, boot=sfn.JsonPath.string_at(state.decision("key_boot_id"))
    )
    unnamed = flow.put("Key's boot unknown", KEY_BOOT, boot=None)
    named.next(then)
    unnamed.next(then)
    return (
        sfn.Choice(flow.scope, "Pass names its key's boot?")
        .when(sfn.Condition.is_present(state.decision("key_boot_id")), named)
        .otherwise(unnamed)
    )


def verdict(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Where a decision of the deep check's stream turns off the flow; others go to ``then``."""
    s = flow.scope

    def label(id: str, value: str, *, retries: int = 1, **more: Any) -> sfn.TaskStateBase:
        # Unguarded: the decision is not recorded yet, so there is nothing for the failure
        # phase to close; each label says below what its error does.
        return flow.kube(
            id,
            "deep_check",
            {
                "instance_id": sfn.JsonPath.string_at(state.INSTANCE_ID),
                "verdict": value,
                "at": sfn.JsonPath.string_at(state.decision("first_seen")),
                **more,
            },
            result_path=VERDICT,
            guard=False,
            retries=retries,
        )

    # A pass comes once: an admission given up leaves a healthy node out until a person
    # looks, so it rides out an API server's outage of minutes (about 8 at the default
    # poll_seconds: 15 s, 30 s ... 240 s).
    def admission(id: str) -> sfn.TaskStateBase:
        return label(
            id,
            "Passed",
            retries=ADMISSION_RETRIES,
            release_hold=sfn.JsonPath.string_at(f"{HOLD}.release"),
            key_boot_id=sfn.JsonPath.string_at(f"{KEY_BOOT}.boot"),
        )

    admit, lift = admission("Admit checked node"), admission("Lift hold cordon")
    # The node stays behind its taint (or its cordon): the failed execution is what people see.
    given_up = sfn.Fail(s, "Admission failed", error="DeepCheckAdmissionFailed")
    admitted = sfn.Succeed(s, "Admitted", comment="the deep check passed", output_path=VERDICT)
    for task in (admit, lift):
        task.add_catch(given_up)
    lift.next(admitted)
    # The lock was read before the admission. On a busy cluster a reboot may have held the
    # node in between (the lock then without its give-back, read as a remediation's): the
    # pass admitted it but kept that hold's cordon, and no other pass comes to lift it. The
    # hold noted its give-back on the lock first, so a read now tells the two apart.
    admit.next(
        sfn.Choice(s, "Hold's cordon kept?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.is_present(f"{VERDICT}.kept_cordon"),
                sfn.Condition.boolean_equals(f"{VERDICT}.kept_cordon", True),
            ),
            _released(flow, then=lift, again=" again"),
        )
        .otherwise(admitted)
    )
    failed = label("Label deep check failed", "Failed")
    # The label only tells people; a node that failed its check is replaced without it.
    failed.add_catch(then, result_path=sfn.JsonPath.DISCARD)
    failed.next(then)
    from_deep_check = sfn.Condition.string_equals(state.decision("source"), DEEP_CHECK_SOURCE)
    return (
        sfn.Choice(s, "Deep check verdict?")
        .when(
            sfn.Condition.and_(
                from_deep_check,
                sfn.Condition.string_equals(state.FAULT_ID, DEEP_CHECK_PASSED_FAULT),
            ),
            _key_boot(flow, then=_released(flow, then=admit)),
        )
        .when(
            sfn.Condition.and_(
                from_deep_check,
                sfn.Condition.string_equals(state.FAULT_ID, DEEP_CHECK_FAILED_FAULT),
                sfn.Condition.string_equals(state.decision("action"), "replace"),
            ),
            failed,
        )
        .otherwise(then)
    )
