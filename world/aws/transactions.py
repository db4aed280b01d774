"""DynamoDB transactions in the local world roll back the items they name, not a copy of
each table they name.

moto's ``transact_write_items`` deep-copies every table a transaction names, once per item
naming it, to put the copy back when a condition fails. The cost grows with the table and
is paid under the one DynamoDB lock (``motopatch.atomic_writes``), where every other
DynamoDB request waits: in a 1,500-node world, the ledger's transactions (a node lock, a
quarantine, an admission) were where the storm's requests queued longest. Here no table is
copied: the items the transaction names are saved first and put back when moto cancels it,
which is all a rollback has to undo (a transaction writes only the items it names).

Public interface: ``item_rollbacks()`` (context manager).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

from moto.dynamodb import models
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models.table import Table

from world.aws.motopatch import TRANSACT_WRITE_ITEMS, replaced

Saved = tuple[str, dict[str, Any], dict[str, Any] | None]
"""(table, key, the item's attributes before the transaction, or None: there was none)."""


def _deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy``, but a table is its own copy: moto's rollback then puts the table
    back as it is, and the saved items undo the transaction's writes."""
    return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _saved(backend: Any, transact_items: list[dict[str, Any]]) -> list[Saved]:
    saved: list[Saved] = []
    for entry in transact_items:
        for operation in entry.values():
            table = backend.tables.get(operation.get("TableName"))
            if table is None:
                continue  # moto refuses it, and writes nothing
            written = operation.get("Item") or {}
            names = (table.hash_key_attr, table.range_key_attr)
            key = operation.get("Key") or {n: written[n] for n in names if n in written}
            try:
                item = backend.get_item(table.name, key)
            except (MockValidationException, KeyError):
                continue  # a malformed key: moto refuses the transaction, writing nothing
            saved.append((table.name, key, item.to_json()["Attributes"] if item else None))
    return saved


def _restore(backend: Any, saved: list[Saved]) -> None:
    for table, key, attributes in reversed(saved):
        if attributes is None:
            backend.delete_item(table, key)
        else:
            backend.put_item(table, attributes)


@contextlib.contextmanager
def item_rollbacks() -> Iterator[None]:
    """While active, moto's transactions save and restore the items they name."""
    transact = TRANSACT_WRITE_ITEMS.current()

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved = _saved(self, transact_items)
        try:
            transact(self, transact_items)
        except Exception:
            _restore(self, saved)
            raise

    with (
        mock.patch.object(models, "copy", SimpleNamespace(deepcopy=_deepcopy)),
        replaced({TRANSACT_WRITE_ITEMS: transact_write_items}),
    ):
        yield
