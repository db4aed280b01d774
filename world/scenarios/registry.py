"""The demo's scenarios, listed once: each name with the function that runs it, the cluster
settings it asks for over ``world.demo_settings`` and the options of the world it runs in.
Each scenario is a module of its own, standing on what they share (``kit``, ``verdict``);
this registry stands on them all. ``nodemedic demo --scenario`` chooses from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from world.nodepool import NODEPOOL
from world.scenarios import (
    default,
    gpureset,
    hyperpod,
    karpenter,
    lifecycle,
    planned,
    rebootwalk,
    spread,
    storm,
)
from world.scenarios import jobs as jobscenario
from world.scenarios.kit import Result
from world.world import NODE_GROUP, RESETTABLE_TYPE, Say, World

SCENARIOS: dict[str, Callable[[World, Say], Result]] = {
    "default": default.run_default,
    "storm": storm.run_storm,
    "spread": spread.run_spread,
    "jobs": jobscenario.run_jobs,
    "lifecycle": lifecycle.run_lifecycle,
    "planned": planned.run_planned,
    "reset": gpureset.run_reset,
    "hyperpod": hyperpod.run_hyperpod,
    "karpenter": karpenter.run_karpenter,
    "reboot": rebootwalk.run_reboot,
}
SETTINGS: dict[str, dict[str, Any]] = {
    "storm": {"fleet_settle": storm.STORM_SETTLE},
    "spread": {"breaker_cooldown": 30, "breaker_hold": 3},
    "jobs": {
        "job_monitoring": True,
        "job_restarts_per_window": 12,
        "job_cluster_restarts_per_window": 12,
    },
    "lifecycle": {
        "post_reboot_deep_check": True,
        "spares": ((NODE_GROUP, 1),),
        "deep_check_timeout": 8,
        "replacements_per_hour": 10,
        "replacements_per_day": 20,
    },
    "planned": {
        "approval": "replace",
        "approval_timeout": 120,
        "planned_lead_time": planned.LEAD_TIME,
    },
    "reset": {"gpu_reset": True},
    "hyperpod": {
        "hyperpod_clusters": (hyperpod.CLUSTER,),
        "hyperpod_repair": "when_recovery_off",
        "hyperpod_events": "act",
    },
    "karpenter": {"karpenter_nodepools": (NODEPOOL,), "reboot_timeout": 180},
    "reboot": rebootwalk.default_settings(),
}
"""A scenario's cluster settings over ``world.demo_settings``: the storm's window settles
in 30 s, so that its one mail lists every node a busy machine classifies late; the spread's
breaker holds and cools down for seconds, not an hour and half an hour, so that the demo
shows it recover (the held decision must end its hold before the cooldown ends, or it trips
the breaker again: a busy machine takes seconds a step, hence 27 s between them); the
jobs scenario makes eight restarts and a failure within two minutes on purpose, more than the
job breaker lets through in a real cluster's window (three). The lifecycle gates every
rebooted node on its deep check, keeps one spare, calls a deep check overdue after 8 s (not
15 minutes) and has room for its five replaces. The planned scenario asks a person before
each replacement, gives up after two minutes, not four hours, and starts a planned repair
20 s before a notice's deadline, not an hour. The reset scenario turns the GPU reset rung on
(off by default: docs/deploy.md, "GPU reset"). The HyperPod scenario lists its cluster, lets
nodemedic act on it while HyperPod's own recovery is off (by default it defers) and lets
HyperPod's own detections act (by default, unsigned, they are at most notified). The
Karpenter scenario lists its NodePool and gives Karpenter's termination of a NodeClaim as
long as a demo reboot would take on a loaded machine, minutes, not the demo's 20 s. The
reboot walk keeps the post-reboot deep check and its timeout at their defaults."""
WORLDS: dict[str, dict[str, Any]] = {
    "lifecycle": {"deep_checks": True, "launch_seconds": lifecycle.LAUNCH_SECONDS},
    "reset": {"instance_type": RESETTABLE_TYPE},
    "hyperpod": {"hyperpod_recovery": hyperpod.RECOVERY},
    "karpenter": {"karpenter_nodes": karpenter.NODES},
    "storm": {"lambda_processes": True},
    "reboot": {
        "types": rebootwalk.TYPES,
        "default_image": True,
        "deep_checks": True,
        "workers": 1,
    },
}
"""A scenario's ``local_world`` options: the lifecycle's nodes join behind the health-check
taint and run the deep check at start; the reset's machines are of a type whose GPUs reset
one at a time; the HyperPod scenario's machines are its cluster's nodes, not the group's;
the Karpenter scenario's training workers run on nodes Karpenter launches for them; the
reboot walk's first machines are a p5, a g6 and a trn1, whose agents find what the default
image finds, and whose nodes join behind the deep check the chart runs at start; its one
training worker moves to a free GPU node when its node drains (the trn1 has no GPU); the
storm's five lines are classified side by side, in Lambda worker processes, so that its
fleet window's one mail finds them all (one at a time, the last came after it once)."""
