"""The simulated kubelets' PodResources sockets are served from a process of their own: the
world's process, which forks every agent and tool, never runs gRPC's threads, and each
node's agent reads the allocation the kubelet last wrote."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.poddevices import GPU_RESOURCE
from agent.podresources import Allocation, list_allocations
from world.kube.podresources import Host

IN_THE_WORLDS_PROCESS = """
import sys, tempfile
from pathlib import Path
from world.kube.podresources import Host
with tempfile.TemporaryDirectory() as folder:
    host = Host(Path(folder))
    host.publish(1, {"train/rank-0": {"nvidia.com/gpu": ["0"]}})
    host.close()
print(sorted(name for name in sys.modules if name.split(".")[0] == "grpc"))
"""


def test_the_worlds_process_never_loads_grpc() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IN_THE_WORLDS_PROCESS],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_each_node_answers_its_latest_allocation_until_withdrawn() -> None:
    # Short: a unix socket's path is at most 107 bytes, and pytest's tmp_path may be long.
    with tempfile.TemporaryDirectory(prefix="nodemedic-") as folder:
        host = Host(Path(folder))
        try:
            host.publish(1, {"train/rank-0": {GPU_RESOURCE: ["0", "1"]}})
            host.publish(2, {})
            assert list_allocations(str(host.socket(1))) == [
                Allocation("train", "rank-0", GPU_RESOURCE, ("0", "1"))
            ]
            assert list_allocations(str(host.socket(2))) == []

            host.publish(1, {"train/rank-1": {GPU_RESOURCE: ["7"]}})
            assert list_allocations(str(host.socket(1))) == [
                Allocation("train", "rank-1", GPU_RESOURCE, ("7",))
            ]

            host.withdraw(2)
            deadline = time.monotonic() + 60
            while host.socket(2).exists():
                assert time.monotonic() < deadline, "a withdrawn node's socket stays served"
                time.sleep(0.05)
        finally:
            host.close()
