"""Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"):
callers throttled together do not try again together. The agent's shipper waits by it
between its sends, the classifier between its throttled starts."""

from __future__ import annotations

from collections.abc import Callable


def backoff(attempt: int, base: float, cap: float, rng: Callable[[], float]) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    return float(rng() * min(cap, base * 2 ** min(attempt, 30)))
