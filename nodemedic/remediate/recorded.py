"""The recorder's marker: a decision is acted on only as the process that made it started it.

Whoever may call ``states:StartExecution`` on the remediation state machine could otherwise
hand it any decision: a ``deep-check`` pass that admits a node, a ``kmsg`` decision no
signed line stands behind. So each process that makes decisions writes one ledger item per
decision right before it starts the execution, in a partition only its own role may write
(``dynamodb:LeadingKeys``, ``stacks/recorded.py``), and the state machine reads it back
before it acts: the item must exist, hold the very fields the execution was given, and the
execution must bear the decision id as its name. An execution name is used once (Step
Functions keeps it for 90 days, longer than a marker lives), so a genuine decision cannot
be replayed under another name. A ``manual`` decision has no marker: a person asks for it,
and whoever may start an execution is such a person (docs/security.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from nodemedic.contracts.kube import MANUAL_SOURCE, PLANNED_SOURCE
from nodemedic.contracts.ledger import CLASSIFIED_PK, HISTORY_TTL_ATTRIBUTE, PLANNED_PK
from nodemedic.remediate.decision import OPTIONAL_FIELDS, Decision

NUMBERS: Final = ("count", "schema")
"""The decision's fields that are numbers; every other field of ``Decision`` is text."""
FLAGS: Final = ("replaceable",)
"""Fields beside ``Decision``'s that the flow acts on, true or false where a decision has
them (a planned one: ``nodemedic.remediate.planned``), kept and compared as well."""
TEXTS: Final = tuple(
    f.name for f in dataclasses.fields(Decision) if f.name not in (*NUMBERS, *OPTIONAL_FIELDS)
)
OPTIONAL_TEXTS: Final = OPTIONAL_FIELDS
"""Text fields only some decisions have (a deep check pass's ``key_boot_id``): kept where
the decision has one, and compared where either side has one."""
KEPT_DAYS: Final = 7
"""How long a marker outlives the start it stands for (its ``purge_at``): the execution
reads it within seconds; a week is far below the 90 days an execution name stays taken."""


def recorder(source: str) -> str | None:
    """The ledger partition of the process that makes decisions of ``source``; None for a
    manual decision, which needs none."""
    if source == MANUAL_SOURCE:
        return None
    return PLANNED_PK if source == PLANNED_SOURCE else CLASSIFIED_PK


def marker(record: Mapping[str, Any], *, starts_at: float) -> dict[str, dict[str, Any]]:
    """The DynamoDB item (attribute values) that records ``record`` as started by its
    recorder, for a remediation that starts at ``starts_at`` (epoch seconds: now, or a
    planned decision's ``act_at``); the ledger's time to live deletes it ``KEPT_DAYS`` later."""
    partition = recorder(str(record["source"]))
    if partition is None:
        raise ValueError("a manual decision is authorized by who may start it, not recorded")
    item: dict[str, dict[str, Any]] = {
        "pk": {"S": partition},
        "sk": {"S": str(record["decision_id"])},
        HISTORY_TTL_ATTRIBUTE: {"N": str(int(starts_at) + KEPT_DAYS * 86400)},
    }
    item.update({name: {"S": str(record[name])} for name in TEXTS})
    item.update({name: {"N": str(int(record[name]))} for name in NUMBERS})
    item.update(
        {name: {"S": str(record[name])} for name in OPTIONAL_TEXTS if record.get(name) is not None}
    )
    item.update({name: {"BOOL": bool(record[name])} for name in FLAGS if name in record})
    return item
