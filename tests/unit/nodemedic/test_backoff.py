"""Full-jitter backoff, as the agent's shipper and the classifier's starts wait by it."""

from __future__ import annotations

import random

from nodemedic.backoff import backoff


def test_backoff_is_full_jitter_capped() -> None:
    assert backoff(1, 0.2, 30.0, lambda: 1.0) == 0.4
    assert backoff(10, 0.2, 30.0, lambda: 1.0) == 30.0
    assert backoff(10, 0.2, 30.0, lambda: 0.5) == 15.0
    assert backoff(100, 0.2, 30.0, lambda: 0.0) == 0.0
    # Agents throttled together do not retry together.
    waits = {backoff(3, 0.2, 30.0, random.random) for _ in range(50)}
    assert len(waits) == 50 and all(0 <= w <= 1.6 for w in waits)
