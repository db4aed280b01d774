"""The world's clock against the wall's: how much slower than real time the world runs on
this machine now.

Everything a scenario plays (kubelets, training, the in-process Lambdas, moto) shares one
Python process and the machine's cores with whatever else runs there. On a busy machine a
pass meant every half second comes every few seconds, and a scenario whose rules expect a
line every five seconds would see a hang that is the machine's, not the job's. A scenario
multiplies the timings it asks of the world (a hang threshold, a start cut-off) by
``pace()``: 1 on an idle machine, more on a busy one, so each outcome it shows is the one
it planned.
"""

from __future__ import annotations

import time
from typing import Final

MAX_PACE: Final = 8.0
"""Beyond this the machine is too busy for any timing to hold: the scenario runs at this
pace and says so rather than wait without end."""


def pace(samples: int = 5, work: float = 0.1) -> float:
    """Wall seconds per second of this thread's CPU over a short busy loop, the worst of
    ``samples``, between 1 and ``MAX_PACE``. A thread that waits for the CPU or for the
    process's other threads (the world's passes) runs that much slower than the wall."""
    worst = 1.0
    for _ in range(samples):
        wall, cpu = time.monotonic(), time.thread_time()
        while time.thread_time() - cpu < work:
            sum(range(1000))
        worst = max(worst, (time.monotonic() - wall) / (time.thread_time() - cpu))
    return min(worst, MAX_PACE)
