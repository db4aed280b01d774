"""``nodemedic triage --format json`` output, split as a script would split it."""

from __future__ import annotations

import json
from typing import Any


def fault_records(out: str) -> list[dict[str, Any]]:
    """The fault lines: the records that carry a ``fault_id``."""
    return [record for record in map(json.loads, out.splitlines()) if "fault_id" in record]


def verdicts(out: str) -> list[dict[str, Any]]:
    """The verdict object that ends each input, unwrapped."""
    return [
        record["verdict"] for record in map(json.loads, out.splitlines()) if "verdict" in record
    ]
