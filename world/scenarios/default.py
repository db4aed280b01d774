"""The demo's default scenario: four lines, one after the other, each on its own node: a
Neuron DMA error (replace), an Xid 48 (reboot with a new boot id), a benign driver line
(nothing) and an Xid 13 (notify only)."""

from __future__ import annotations

from world.scenarios.kit import DMA_ERROR, XID_48, Result
from world.scenarios.verdict import each_judged
from world.timeline import Fault
from world.world import Say, World

DEFAULT = (
    DMA_ERROR,
    XID_48,
    Fault("xid", "162", "nothing", "benign driver line: power smoothing re-engaged (Xid 162)"),
    Fault("xid", "13", "notify", "application fault: graphics exception (Xid 13)"),
)


def run_default(world: World, say: Say) -> Result:
    return Result("default", each_judged(world, DEFAULT, say))
