"""The answer to a drain's checkpoint request: the first line of the job's checkpoint rule
logged since the request (docs/jobs.md, "Checkpoint before a drain")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodemedic.jobs.rules import Rule


def saved_at(
    rules: Sequence[Rule], name: str, lines: Iterable[tuple[float, str]], since: float
) -> float | None:
    """Log time of the first line at or after ``since`` that rule ``name``'s ``logPattern``
    matches; None without such a rule or line. A line from before the request is an older
    checkpoint, which the job's pods would lose the work since."""
    rule = next((r for r in rules if r.name == name), None)
    if rule is None:
        return None
    return min(
        (at for at, text in lines if at >= since and rule.log_pattern.match(text)), default=None
    )
