"""Which health results a check run ships: faults every run, changes at once, an unchanged
healthy result once per ``healthy_every`` (``agent.healthship``)."""

from __future__ import annotations

from agent.healthship import Changes
from nodemedic.health.result import Result


def gpus(*statuses: str) -> list[Result]:
    return [
        Result("nvidia-smi", f"gpu{n}", "ok" if s == "ok" else "fail", s)
        for n, s in enumerate(statuses)
    ]


def shipped(changes: Changes, results: list[Result], now: float) -> list[str]:
    return [f"{r.device}:{r.reason}" for r in changes.to_ship(results, now)]


def test_a_healthy_node_ships_its_results_once_per_interval_not_every_run() -> None:
    changes = Changes(every=900.0)
    runs = [shipped(changes, gpus("ok", "ok"), at) for at in range(0, 1800, 60)]
    assert runs[0] == ["gpu0:ok", "gpu1:ok"]
    assert sum(map(len, runs)) == 4, "the first run and the one 900 s later"
    assert runs[15] == ["gpu0:ok", "gpu1:ok"]


def test_a_fault_ships_every_run_and_its_recovery_at_once() -> None:
    changes = Changes(every=900.0)
    shipped(changes, gpus("ok", "ok"), 0)
    assert shipped(changes, gpus("ok", "XidError"), 60) == ["gpu1:XidError"]
    assert shipped(changes, gpus("ok", "XidError"), 120) == ["gpu1:XidError"]
    assert shipped(changes, gpus("ok", "ok"), 180) == ["gpu1:ok"]
    assert shipped(changes, gpus("ok", "ok"), 240) == []


def test_zero_ships_every_result_every_run() -> None:
    changes = Changes(every=0.0)
    assert shipped(changes, gpus("ok"), 0) == shipped(changes, gpus("ok"), 0) == ["gpu0:ok"]
