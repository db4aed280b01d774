"""The demo's default scenario: four lines, one after the other, each on its own node: a
Neuron DMA error (replace), an Xid 48 (reboot with a new boot id), a benign driver line
(nothing) and an Xid 13 (notify only). Then the reconcile runs once, as its one-minute
schedule would have during the demo on AWS: it publishes the counts of silent, stranded and
all nodes the dashboard draws."""

from __future__ import annotations

from world.scenarios.kit import DMA_ERROR, RECONCILE, XID_48, Result, run_as_scheduled
from world.scenarios.verdict import each_judged
from world.timeline import Fault
from world.world import Say, World

DEFAULT = (
    DMA_ERROR,
    XID_48,
    Fault("xid", "162", "nothing", "benign driver line: power smoothing re-engaged (Xid 162)"),
    Fault("xid", "13", "notify", "application fault: graphics exception (Xid 13)"),
)
RECONCILE_TIMEOUT = 120.0


def run_default(world: World, say: Say) -> Result:
    result = Result("default", each_judged(world, DEFAULT, say))
    say("")
    say("reconcile (an EventBridge schedule, every minute on AWS): run once")
    ticked = run_as_scheduled(world, RECONCILE, RECONCILE_TIMEOUT)
    if ticked is None:
        result.problems.append(f"the reconcile did not end within {RECONCILE_TIMEOUT:.0f}s")
        return result
    say(f"  stranded nodes: {ticked.get('count')} {ticked.get('nodes') or ''}".rstrip())
    return result
