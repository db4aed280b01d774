"""How execution-state paths and the ledger's rules become States Language values.

Paths come from ``stacks.remediation.kit.state``, keys, expressions and item shapes from
``nodemedic.remediate.ledger``; what is here only translates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK
from nodemedic.remediate import breaker, ledger
from nodemedic.remediate.expressions import Condition, Update
from stacks.remediation.kit import state

Value = tasks.DynamoAttributeValue
V = TypeVar("V")
NOW: Final = sfn.JsonPath.state_entered_time
"""When the current state was entered: every state's own clock."""


def text_at(path: str) -> str:
    return sfn.JsonPath.string_at(path)


def formatted(template: str, *args: str) -> str:
    """``States.Format``; arguments starting with ``$`` are paths, others literal text."""
    return sfn.JsonPath.format(template, *(text_at(a) if a.startswith("$") else a for a in args))


def entered_at() -> dict[str, Any]:
    """A result selector that keeps only when the state ran: ``{at}``."""
    return {"at": NOW}


def dynamo_text(path: str) -> Value:
    return Value.from_string(text_at(path))


def dynamo_number(path: str) -> Value:
    return Value.number_from_string(formatted("{}", path))


def dynamo_json(path: str) -> Value:
    """The object at ``path`` as one JSON string attribute."""
    return Value.from_string(sfn.JsonPath.json_to_string(sfn.JsonPath.object_at(path)))


def dynamo_now() -> Value:
    return Value.from_string(NOW)


def dynamo_instance_set() -> Value:
    """This instance as a string set: the breaker's unit of admission."""
    return Value.from_string_set(sfn.JsonPath.list_at(state.INSTANCE_IDS))


def record_key() -> dict[str, Value]:
    return ledger.key(dynamo_text(state.INSTANCE_ID), dynamo_text(state.RECORD_SK))


def lock_key(instance: str = state.INSTANCE_ID) -> dict[str, Value]:
    """The node lock's key, of the instance at path ``instance``."""
    return ledger.key(dynamo_text(instance), Value.from_string(LOCK_SK))


def reboot_key() -> dict[str, Value]:
    return ledger.key(dynamo_text(state.INSTANCE_ID), dynamo_text(state.REBOOT_SK))


def breaker_key() -> dict[str, Value]:
    return ledger.key(
        Value.from_string(formatted(ledger.BREAKER_PK, state.GROUP_NAME)),
        Value.from_string(BREAKER_SK),
    )


def cluster_breaker_key(cluster: str) -> dict[str, Value]:
    """The cluster's breaker (``nodemedic.remediate.breaker``)."""
    return ledger.key(
        Value.from_string(breaker.CLUSTER_PK.format(cluster)), Value.from_string(breaker.CLUSTER_SK)
    )


def rate_key(cluster: str, window: str) -> dict[str, Value]:
    """The rate window at path ``window`` of this decision's group and action."""
    return ledger.key(
        Value.from_string(breaker.CLUSTER_PK.format(cluster)),
        Value.from_string(formatted(breaker.RATE_SK, state.GROUP_NAME, state.ACTION, window)),
    )


def expression_values(values: Mapping[str, V], *expressions: Condition | Update) -> dict[str, V]:
    """``values`` for the ``expressions``' placeholders, refusing at synth time a value
    missing or one too many: the rule and the task that sends it cannot drift apart."""
    wanted = frozenset().union(*(e.placeholders for e in expressions))
    if set(values) != wanted:
        raise ValueError(f"values {sorted(values)} for placeholders {sorted(wanted)}")
    return dict(values)
