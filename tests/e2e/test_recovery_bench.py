"""The time-to-recovery benchmark's measure on a small world: a reboot and a replacement of
a node running a worker of the training job, each timed from the line to the job running
again, in that order of steps."""

from __future__ import annotations

import pytest

from bench.recovery import NODES, STEPS, job_running, recover
from world.world import World

pytestmark = [pytest.mark.kube, pytest.mark.slow]
WORLD_OPTIONS = {"nodes": NODES, "workers": NODES, "launch_seconds": 1.0}


def test_each_path_is_timed_from_the_line_to_the_job_running_again(world: World) -> None:
    used: set[str] = set()
    for path in ("reboot", "replace"):
        recovery = recover(world, path, used)
        times = [recovery.seconds[step] for step in STEPS]
        assert 0 < times[0] <= times[1] <= times[2], (path, recovery.seconds)
        assert job_running(world)
    assert len(used) == 2
