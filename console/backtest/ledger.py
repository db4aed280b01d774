"""The ledger table in memory: each write is a key, a condition and an update, the
expressions of ``nodemedic.remediate.ledger`` evaluated by ``nodemedic.remediate.expressions``.
The backtest runs the state machine's rules on it, the unit tests check the rules on it.
Not in the Lambda bundle: no handler needs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodemedic.remediate import ledger
from nodemedic.remediate.expressions import Condition, Update, Values

Key = tuple[str, str]
Write = tuple[Key, Update, Condition | None, Values]


class Store:
    """The ledger table in memory. A write whose condition fails changes nothing and says
    False, as DynamoDB's ConditionalCheckFailedException would."""

    def __init__(self) -> None:
        self.items: dict[Key, dict[str, Any]] = {}

    def item(self, key: Key) -> dict[str, Any]:
        """The item, ``{}`` when there is none (what a condition sees)."""
        return dict(self.items.get(key, {}))

    def holds(self, key: Key, condition: Condition | None, values: Values) -> bool:
        return condition is None or condition.holds(self.item(key), values)

    def put(
        self, key: Key, attributes: dict[str, Any], condition: Condition | None, values: Values
    ) -> bool:
        if not self.holds(key, condition, values):
            return False
        self.items[key] = {**ledger.key(*key), **attributes}
        return True

    def update(self, key: Key, change: Update, condition: Condition | None, values: Values) -> bool:
        if not self.holds(key, condition, values):
            return False
        self.items[key] = change.apply({**ledger.key(*key), **self.item(key)}, values)
        return True

    def delete(self, key: Key, condition: Condition, values: Values) -> bool:
        if not self.holds(key, condition, values):
            return False
        self.items.pop(key, None)
        return True

    def transact(self, writes: Sequence[Write]) -> bool:
        """Every update if every condition holds, else none (TransactWriteItems)."""
        if not all(self.holds(key, condition, values) for key, _, condition, values in writes):
            return False
        for key, change, _, values in writes:
            self.update(key, change, None, values)
        return True
