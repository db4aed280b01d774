"""The breaker's rate windows are the clock hour and the UTC day
(``nodemedic.remediate.breaker.windows``): a test that counts starts against a limit, run
across the top of an hour, sees a fresh window mid-way and admits what it expects held.
Such a test first makes sure its run fits in one hour."""

from __future__ import annotations

import time

from tests.support.kube import wait_for

HOUR = 3600


def within_one_hour(seconds: float) -> None:
    """Return once at least ``seconds`` are left in the clock hour: at once, or when the next
    hour begins. ``seconds`` bounds the test's run on a busy machine."""
    wait_for(
        lambda: HOUR - time.time() % HOUR >= seconds,
        timeout=seconds + 60,
        what=f"a clock hour with {seconds:.0f} s left",
    )
