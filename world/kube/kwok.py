"""KWOK as the kubelets of a large local world: the ``kwok`` controller (built and cached by
``build-kwok.sh``) runs against the local kube-apiserver and, with its default ``fast``
stages, makes every Node Ready and every pod bound to one Running.

Why: the simulated kubelet (``kubelet.py``) lists every pod on each pass and serves a
PodResources socket per Node, which is what the agents of an 8-node world need and what a
1,500-node world cannot afford on two cores. Here KWOK owns the Nodes' status and their
pods, and keeps each Node's lease, as kubelets do; what stays in Python is only what KWOK
does not know of: a reboot, which the hypervisor asks for and which brings the Node back
with a new boot id (``KwokKubelet``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

from world.kube.kubeapi import (
    LocalCluster,
    ensure_binaries,
    free_ports,
    spawn,
    stop,
    wait_ready,
)
from world.kube.kubelet import SimulatedKubelet

BUILD_SCRIPT = Path(__file__).with_name("build-kwok.sh")
BINARY = "kwok"
LEASE_SECONDS = 40
"""Each Node's lease, as a kubelet's default (``--node-lease-duration-seconds``): renewed by
KWOK, so the node lifecycle controller never takes a quiet Node for a dead one."""


class KwokKubelet(SimulatedKubelet):
    """The world's kubelet where KWOK runs the Nodes: a Node registers with no condition,
    and KWOK's ``node-initialize`` stage makes it Ready; its pods are KWOK's. A reboot is
    still played here: NotReady now, Ready with a new boot id once it ends (KWOK's stage
    reports the Node Ready again meanwhile, keeping its boot id)."""

    kwok = True


@contextlib.contextmanager
def kwok_controller(
    cluster: LocalCluster, workdir: Path, *, timeout: float = 120.0
) -> Iterator[Path]:
    """KWOK managing every Node of ``cluster`` until the block ends; yields its log."""
    bins = ensure_binaries(BUILD_SCRIPT, (BINARY,))
    workdir.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    process = spawn(
        BINARY,
        [
            str(bins / BINARY),
            f"--kubeconfig={cluster.kubeconfig}",
            *(f"--config={stage}" for stage in sorted((bins / "stages").glob("*.yaml"))),
            "--manage-all-nodes=true",
            f"--node-lease-duration-seconds={LEASE_SECONDS}",
            f"--server-address=127.0.0.1:{port}",
        ],
        workdir,
    )
    try:
        wait_ready([process], workdir, port, None, time.monotonic() + timeout)
        yield workdir / f"{BINARY}.log"
    finally:
        stop([process])


@contextlib.contextmanager
def kwok_kubelets(
    cluster: LocalCluster, api: client.ApiClient, workdir: Path
) -> Iterator[KwokKubelet]:
    """KWOK and the reboots it leaves to the world, started together and stopped together."""
    kubelet = KwokKubelet(api, interval=0.5)
    with kwok_controller(cluster, workdir), kubelet:
        yield kubelet


def wait_ready_nodes(api: client.ApiClient, names: set[str], timeout: float) -> float:
    """Seconds until every Node in ``names`` is Ready (one list a second, not a watch per
    Node); TimeoutError naming how many are not."""
    core = client.CoreV1Api(api)
    began = time.monotonic()
    while True:
        ready = {n.metadata.name for n in core.list_node().items if _ready(n)}
        missing = names - ready
        if not missing:
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            raise TimeoutError(f"{len(missing)} of {len(names)} Nodes not Ready in {timeout:.0f}s")
        time.sleep(1)


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))
