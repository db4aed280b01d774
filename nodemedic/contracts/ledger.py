"""Keys of the ledger (DynamoDB, partition ``pk``, sort ``sk``) that more than one process
writes or reads."""

from __future__ import annotations

from typing import Final

# The ledger (DynamoDB, partition ``pk``, sort ``sk``) ---------------------------------------

LOCK_SK: Final = "inflight"
"""``<instance-id>`` / ``inflight``: the node lock, one remediation per node."""
BREAKER_SK: Final = "breaker"
"""``group#<asg>`` / ``breaker``: the instances of a node group holding a breaker slot."""
GROUP_PK_PREFIX: Final = "group#"
DECISION_SK_PREFIX: Final = "decision#"
"""``<instance-id>`` / ``decision#<decision_id>``: one remediation, its state and timings."""
HEARTBEAT_PK: Final = "heartbeat"
"""``heartbeat`` / ``<instance-id>``: when the node's agent was last heard (``heard_at``,
epoch seconds), the state its heartbeat carried, and ``notified_at`` once its silence was
notified. One partition, so one Query reads a whole cluster."""
GATE_PK: Final = "deep-check"
"""``deep-check`` / ``<instance-id>``: the post-reboot gate's record, which only the kube
Lambda's ``deep_check`` and ``hold_for_deep_check`` ops write (no node credential reaches
the ledger): ``passed_at``, the last pass's line time, and ``held_since``, when the node's
last hold began (its reboot), both ISO 8601 UTC, ``held_by``, the holding decision, and
``passed_boot`` / ``held_boot``, the boot whose key proved the pass and the boot the reboot's
watch saw come back (each absent when not known)."""
REBOOT_SK_PREFIX: Final = "reboot#"
"""``<instance-id>`` / ``reboot#<fault_id>``: the last reboot for a fault (escalation)."""
RESET_SK_PREFIX: Final = "reset#"
"""``<instance-id>`` / ``reset#<pci bus id>``: the last reset of a GPU (escalation)."""
FLEET_SK_PREFIX: Final = "fleet#"
"""``group#<asg>`` / ``fleet#<fault_id>``: the group's nodes that reported a fault within
the fleet window, and whether they make a fleet event."""
QUARANTINE_SK_PREFIX: Final = "quarantine#"
"""``group#<asg>`` and ``cluster#<name>`` / ``quarantine#<window index>``: the nodes
quarantined in one quarantine window, and when the window's limit tripped."""


def group_pk(group: str) -> str:
    return GROUP_PK_PREFIX + group


CLUSTER_PK_PREFIX: Final = "cluster#"
"""``cluster#<name>`` / ``breaker``: the cluster's breaker, its holders across node groups
and its tripped state; ``cluster#<name>`` / ``rate#<group>#<action>#<window>``: the
remediations of that action started in a group in one clock hour or UTC day."""
RATE_SK_PREFIX: Final = "rate#"
HISTORY_TTL_ATTRIBUTE: Final = "purge_at"
"""The ledger table's time-to-live attribute (epoch seconds): only decision records carry
it, ``history_days`` after their plan, so ``nodemedic history`` reads them that long."""
STEP_AT_PREFIX: Final = "at_"
"""``at_<state>`` on a decision record: when its remediation entered that state (``held``,
``marking``, ``draining``, ``rebooting``, ``replacing``, ``closed``, ``failed``...)."""


def cluster_pk(cluster: str) -> str:
    return CLUSTER_PK_PREFIX + cluster


APPROVAL_TOKEN: Final = "approval_token"  # noqa: S105 (an attribute's name)
"""On a decision record awaiting a person's answer: the Step Functions task token that
``nodemedic approve|deny`` answers (``nodemedic.remediate.approval``)."""
CLASSIFIED_PK: Final = "recorded#classifier"
"""``recorded#classifier`` / ``<decision_id>``: a decision the classifier started, its
fields as it started it. Only the classifier's role may write this partition; the
remediation state machine reads it before it acts (``nodemedic.remediate.recorded``)."""
PLANNED_PK: Final = "recorded#planned"
"""``recorded#planned`` / ``<decision_id>``: the same, of a decision the planned Lambda
made of an AWS notice; only its role may write this partition."""
REGISTRATION_PK_PREFIX: Final = "registration#"
"""``registration#<instance-id>`` / ``<boot_id>``: the registration of that boot's key that
the classifier proved (``key_id``; ``registered_ms``, the time of the first event that
carried it; ``sealed``, the registration as the agent sealed it, so a reader of the ledger
never sees a key). Only the classifier's role may write this partition, and it writes a
boot's item once, with its first key: no node credential reaches the ledger."""


def registration_pk(instance_id: str) -> str:
    return REGISTRATION_PK_PREFIX + instance_id
