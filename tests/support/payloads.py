"""Subscription payloads wrapped the way CloudWatch Logs wraps them."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from tests.support.paths import EVENTS as EVENTS_ROOT

EVENTS = EVENTS_ROOT / "subscription"


def decoded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return data


def wrap(data: dict[str, Any]) -> dict[str, Any]:
    raw = gzip.compress(json.dumps(data).encode())
    return {"awslogs": {"data": base64.b64encode(raw).decode()}}
