"""Handlers the in-process Lambda tests deploy (referenced by their Handler strings)."""

from __future__ import annotations

import os
from typing import Any


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"event": event, "greeting": os.environ["GREETING"], "function": context.function_name}


def refuse(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise LookupError(f"no such node: {event.get('node')}")


def publish(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Publishes ``event["value"]`` as the handlers do: an EMF line on standard output."""
    from lambdas.observability import publish_count

    publish_count("Probed", float(event["value"]), {"Cluster": str(event["cluster"])})
    return {}
