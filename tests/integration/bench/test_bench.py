"""Each benchmark that needs no local world runs at a tiny size, exits 0 and prints its
figure beside its baseline, so that none breaks unseen; and every benchmark the Makefile
runs has a tiny size in ``tests.support.benches``."""

from __future__ import annotations

import pytest

from tests.support.benches import QUICK, makefile_benches, run_quick

QUICK_ONLY = [
    pytest.param(m, marks=[pytest.mark.slow] if m == "bench.agent" else [])
    for m, q in QUICK.items()
    if not q.world
]


def test_every_bench_of_the_makefile_has_a_quick_run() -> None:
    assert sorted(makefile_benches()) == sorted(QUICK)


@pytest.mark.parametrize("module", QUICK_ONLY)
def test_a_bench_runs_at_a_tiny_size_beside_its_baseline(module: str) -> None:
    run_quick(module)
