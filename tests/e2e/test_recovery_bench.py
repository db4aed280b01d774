"""The time-to-recovery benchmark's measure on a small world: a reboot, a GPU reset and a
replacement of a node running a worker of the training job, each timed from the line to the
job running again, in that order of steps. The world is the one ``bench.recovery`` measures
the three in: ``gpu_reset`` on, machines that can reset one GPU."""

from __future__ import annotations

import pytest

from bench.recovery import NODES, STEPS, job_running, recover, resetting
from world.world import World

pytestmark = [pytest.mark.kube, pytest.mark.slow]
WORLD_SETTINGS, INSTANCE_TYPE = resetting(True)
WORLD_OPTIONS = {
    "nodes": NODES,
    "workers": NODES,
    "launch_seconds": 1.0,
    "instance_type": INSTANCE_TYPE,
}


def test_each_path_is_timed_from_the_line_to_the_job_running_again(world: World) -> None:
    used: set[str] = set()
    for path in ("reboot", "reset", "replace"):
        recovery = recover(world, path, used)
        times = [recovery.seconds[step] for step in STEPS]
        assert 0 < times[0] <= times[1] <= times[2], (path, recovery.seconds)
        assert job_running(world)
    assert len(used) == 3
    assert [status for _, status in world.gpus.resets] == ["Success"], "the reset path reset"
