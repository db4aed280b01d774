"""Rates the line benchmarks share: they run on a machine other work shares too."""

from __future__ import annotations

import time
from collections.abc import Callable

PASSES = 3


def best_rate(work: Callable[[], object], count: int) -> float:
    """Items a second of the fastest of ``PASSES`` runs of ``work`` over ``count`` items: a
    burst of other work on the machine slows one pass, not the best one."""
    best = 0.0
    for _ in range(PASSES):
        start = time.perf_counter()
        work()
        best = max(best, count / (time.perf_counter() - start))
    return best
