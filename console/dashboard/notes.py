"""What a widget's notes say when it draws nothing: why, in one plain line, never an
empty chart that passes for a quiet system nor an error page's body."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_PERCENTILE = re.compile(r"(?:p|tm|wm|tc|ts|pr)\d", re.IGNORECASE)
"""CloudWatch's percentile and trimmed statistics (p99, tm90, …)."""
PROP = re.compile(r"\$\{PROP\('(?:Dim\.)?(\w+)'\)\}")
"""A label's ``${PROP('Dim.X')}``, which each series fills with its own value."""


def entry_name(entry: Sequence[Any]) -> str:
    """What a note calls the entry: its label without the ``${PROP(…)}`` it fills per
    series, else its metric, else the start of its expression."""
    options = entry[-1] if entry and isinstance(entry[-1], dict) else {}
    plain = " ".join(str(p) for p in entry if not isinstance(p, dict))
    label = PROP.sub("", str(options.get("label", ""))).strip()
    return label or plain or str(options.get("expression", ""))[:60]


def silence(name: str, names: Sequence[str], *, found: bool | None) -> str:
    """Why an entry of a widget that drew nothing is empty: no metric of its query exists
    here at all (``found`` False), or its metrics (or its plain metric, ``found`` None)
    have no datapoint in the range."""
    named = ", ".join(names)
    who = name if not named or name == named else f"{name} ({named[:80]})"
    if found is False:
        return f"{who}: never published to this CloudWatch"
    return f"{who}: no datapoint in this time range"


def answer(exc: Exception, statistics: set[str]) -> str:
    """CloudWatch's error in one line; a server error by its status, not its body (a moto
    without the local world's ``percentile_statistics`` answers a percentile statistic with an
    HTML page and status 500)."""
    response: Mapping[str, Any] = getattr(exc, "response", {})
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if status >= 500:
        percentiles = sorted(s for s in statistics if _PERCENTILE.match(s))
        if percentiles:
            return (
                f"this CloudWatch computes no percentiles ({', '.join(percentiles)}): "
                "on AWS this widget is drawn"
            )
        return f"CloudWatch failed (HTTP {status})"
    error = response.get("Error", {})
    return f"{error.get('Code', '')} {error.get('Message', '')}".split("\n")[0][:120]
