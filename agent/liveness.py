"""What the liveness probe asserts: every loop of the agent keeps turning.

Each loop (the collector, the health checks, the shipper) beats once per turn and says how
often it turns at most (``every``). The probe fails when a loop has not beaten for
``STALL_TURNS`` of its turns plus a grace: the loop is stuck (a hung read, a deadlock, a
dead thread), and only a restart helps. It does not fail when the kernel log is idle (the
collector's read times out every flush interval and the loop turns anyway), nor when
CloudWatch Logs is away or refuses the credentials (the shipper turns once per attempt,
retrying and spooling: a restart would not bring AWS back, and would only lose what is in
memory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

STALL_TURNS = 3
"""Missed turns before a loop counts as stuck."""


class Liveness:
    def __init__(self, grace: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._grace = grace
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._every: dict[str, float] = {}

    def expect(self, loop: str, every: float) -> None:
        """``loop`` turns at least once every ``every`` seconds from now on."""
        with self._lock:
            self._every[loop] = every
            self._last[loop] = self._clock()

    def beat(self, loop: str) -> None:
        self._last[loop] = self._clock()

    def ages(self) -> dict[str, float]:
        """Seconds since each loop last turned."""
        now = self._clock()
        with self._lock:
            return {loop: now - last for loop, last in sorted(self._last.items())}

    def stalled(self) -> list[str]:
        """The loops that missed ``STALL_TURNS`` turns and the grace: stuck."""
        ages = self.ages()
        return [
            loop
            for loop, age in ages.items()
            if age > STALL_TURNS * self._every[loop] + self._grace
        ]
