"""Time to recovery of the training job on each path, in the local world: a fault line
written on a node that runs one of the job's workers → the node cordoned → capacity back in
service → the job running again (every worker bound and running).

The job has a worker on every node in service, one per node, so a drained worker waits
Pending until a node takes it: the node itself after a reboot, the replacement after a
replace, the spare at once where the group keeps one. Paths, each a fault of the catalog:

- ``reboot``: an Xid 48 (today's reboot path, the baseline every other path is beside);
- ``reset``: an Xid 46 (NVIDIA: RESET_GPU) with ``gpu_reset`` on, on machines whose GPUs
  reset one at a time: the GPU reset through SSM Run Command, the node given back at the
  same boot;
- ``replace``: a Neuron DMA error, no spare: the replacement launches and joins;
- ``spare``: the same fault in a group with a spare in Standby (``spares: 1``).

The reboot, the reset and the replace run in one world, the spare in a second (its group
keeps a spare). Where the reset is measured, the first world has ``gpu_reset`` on and
``RESETTABLE_TYPE`` machines: the reboot and the replace act there as anywhere (an Xid 48
is a reboot, a DMA error a replace, whatever ``gpu_reset`` says). The launch and join of an
instance is simulated (``--launch-seconds``), and so are the GPU and its ``nvidia-smi``
(``world.aws.gpus``); the rest is the real pipeline. On AWS each stage takes longer:
docs/scale.md has the figures.

    python -m bench.recovery [--paths reboot,reset,replace,spare] [--launch-seconds 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from bench.mttr import next_machine
from bench.storm import executions
from nodemedic.settings import ClusterSettings
from world.scenarios.gpureset import XID_46
from world.scenarios.kit import DMA_ERROR, XID_48
from world.start import local_world
from world.terminal import chatter_to, copy_of
from world.timeline import Fault, inject
from world.world import INSTANCE_TYPE, NODE_GROUP, RESETTABLE_TYPE, World, demo_settings

WAIT = 180.0
"""Seconds a path may take from the line to the job running again before the run fails."""
POLL = 0.1
NODES = 4
PATHS: dict[str, Fault] = {
    "reboot": XID_48,
    "reset": XID_46,
    "replace": DMA_ERROR,
    "spare": DMA_ERROR,
}
STEPS = ("cordoned", "in service", "job running")


@dataclass(frozen=True)
class Recovery:
    path: str
    node: str
    seconds: dict[str, float]
    """Step → seconds from the line written."""


def serving(api: client.ApiClient) -> set[str]:
    """The Nodes that are Ready and schedulable."""
    return {
        node.metadata.name
        for node in client.CoreV1Api(api).list_node().items
        if not node.spec.unschedulable
        and any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    }


def job_running(world: World) -> bool:
    """Every worker of the job bound to a node and running."""
    pods = [p for p in world.job.pods() if p.metadata.deletion_timestamp is None]
    return len(pods) == world.job.workers and all(
        p.spec.node_name and p.status.phase == "Running" for p in pods
    )


def until(check: Callable[[], bool], what: str) -> float:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {WAIT:g}s")
        time.sleep(POLL)
    return time.time()


def recover(world: World, path: str, used: set[str]) -> Recovery:
    """One fault of ``path`` on a node running a worker, timed to the job running again,
    once the last remediation has ended (else the breaker would hold this one)."""
    until(lambda: not executions(world)["RUNNING"], "the last remediation ended")
    until(lambda: job_running(world), "the job running before the fault")
    machine = next_machine(world, used)
    used.add(machine.instance_id)
    capacity = len(serving(world.api))
    worker = next(p.metadata.name for p in world.job.pods() if p.spec.node_name == machine.node)
    run = inject(world, machine, PATHS[path])
    times = {
        "cordoned": until(
            lambda: machine.node not in serving(world.api), f"{path}: {machine.node} cordoned"
        )
    }
    displaced = until(
        lambda: worker not in {p.metadata.name for p in world.job.pods()},
        f"{path}: the worker on {machine.node} evicted",
    )
    times["in service"] = until(
        lambda: len(serving(world.api)) >= capacity, f"{path}: capacity back in service"
    )
    times["job running"] = max(
        until(lambda: job_running(world), f"{path}: the job running again"), displaced
    )
    return Recovery(path, machine.node, {k: v - run.written_at for k, v in times.items()})


def measure(
    paths: list[str], workdir: Path, launch: float, say: Callable[[str], None]
) -> list[Recovery]:
    """Each path once; the paths without a spare share a world, the spare has its own."""
    found: list[Recovery] = []
    shared = [p for p in paths if p != "spare"]
    worlds: list[tuple[list[str], ClusterSettings, str]] = [
        (shared, *resetting("reset" in shared)),
        (
            [p for p in paths if p == "spare"],
            demo_settings(spares=((NODE_GROUP, 1),)),
            INSTANCE_TYPE,
        ),
    ]
    for number, (group, settings, instance_type) in enumerate(worlds):
        if not group:
            continue
        where = workdir / f"world-{number}"
        say(f"local world for {', '.join(group)} in {where}")
        with (
            chatter_to(workdir / f"world-{number}.log"),
            local_world(
                where,
                settings=settings,
                nodes=NODES,
                workers=NODES,
                say=say,
                launch_seconds=launch,
                instance_type=instance_type,
            ) as world,
        ):
            used: set[str] = set()
            for path in group:
                found.append(recover(world, path, used))
                say(
                    f"  {path}: "
                    + ", ".join(f"{k} +{v:.2f}s" for k, v in found[-1].seconds.items())
                )
    return found


def resetting(resets: bool) -> tuple[ClusterSettings, str]:
    """The settings and the machines' type of a world where the reset path is measured
    (``resets``), or of one where it is not."""
    if resets:
        return demo_settings(gpu_reset=True), RESETTABLE_TYPE
    return demo_settings(), INSTANCE_TYPE


def report(found: list[Recovery], launch: float) -> None:
    resets = any(r.path == "reset" for r in found)
    print(
        f"Time to recovery in the local world ({NODES} nodes, a worker of the job on each; "
        f"launch and join simulated in {launch:g}s"
        + (f"; reset on {RESETTABLE_TYPE}, its GPU and nvidia-smi simulated" if resets else "")
        + "), seconds from the fault line written"
    )
    print(f"  {'path':<10}" + "".join(f"{step:>14}" for step in STEPS) + "   job running vs reboot")
    base = next((r for r in found if r.path == "reboot"), None)
    for recovery in found:
        cells = "".join(f"{recovery.seconds[step]:13.2f}s" for step in STEPS)
        ratio = (
            f"{recovery.seconds['job running'] / base.seconds['job running']:.2f}x" if base else "-"
        )
        print(f"  {recovery.path:<10}{cells}   {ratio}")
    if base:
        print(
            f"  baseline: today's reboot path, job running again after "
            f"{base.seconds['job running']:.2f}s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(PATHS), help="of " + ", ".join(PATHS))
    parser.add_argument(
        "--launch-seconds",
        type=float,
        default=30.0,
        help="simulated launch and join of a replacement (a p5's take minutes on AWS)",
    )
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    paths = args.paths.split(",")
    unknown = set(paths) - set(PATHS)
    if unknown:
        parser.error(f"unknown paths {sorted(unknown)}: the paths are {', '.join(PATHS)}")
    if "reboot" not in paths:
        paths.insert(0, "reboot")  # the baseline, measured in the same run
    progress = copy_of(sys.stderr)

    def say(text: str) -> None:
        print(text, file=progress, flush=True)

    with tempfile.TemporaryDirectory(prefix="nodemedic-recovery-") as temporary:
        found = measure(paths, args.workdir or Path(temporary), args.launch_seconds, say)
    report(found, args.launch_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
