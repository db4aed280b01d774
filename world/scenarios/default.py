"""The demo's default scenario: four lines, one after the other, each on its own node: a
Neuron DMA error (replace), an Xid 48 (reboot with a new boot id), a benign driver line
(nothing) and an Xid 13 (notify only)."""

from __future__ import annotations

from world.observe import Observer
from world.scenarios.kit import DMA_ERROR, Result, targets
from world.scenarios.verdict import judged
from world.timeline import Fault, inject
from world.world import Say, World

DEFAULT = (
    DMA_ERROR,
    Fault("xid", "48", "reboot", "GPU uncorrectable double-bit ECC error (Xid 48)"),
    Fault("xid", "162", "nothing", "benign driver line: power smoothing re-engaged (Xid 162)"),
    Fault("xid", "13", "notify", "application fault: graphics exception (Xid 13)"),
)


def run_default(world: World, say: Say) -> Result:
    observer = Observer(world)
    runs = []
    for fault, machine in zip(DEFAULT, targets(world, len(DEFAULT)), strict=True):
        say("")
        say(f"{fault.title} on {machine.node} ({machine.instance_id}); expect: {fault.expect}")
        run = inject(world, machine, fault)
        runs.append(run)
        judged(world, observer, run, say)
    return Result("default", runs)
