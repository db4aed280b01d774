"""The health result line (agent → Logs): one check's verdict on one device."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

Status = Literal["ok", "warn", "fail", "skipped"]
Figure = int | float | str


def utc_stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Result:
    check: str
    device: str
    status: Status
    reason: str
    figures: Mapping[str, Figure] = field(default_factory=dict)
    ts: str = ""

    def to_json(self) -> str:
        """Compact, keys in the contract's order (check, device, status, reason, figures, ts)."""
        return json.dumps(
            {
                "check": self.check,
                "device": self.device,
                "status": self.status,
                "reason": self.reason,
                "figures": dict(self.figures),
                "ts": self.ts,
            },
            separators=(",", ":"),
        )
