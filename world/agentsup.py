"""The world's agents are up once they ship and their keys are registered.

A world whose agents sign (every local world does) is ready for faults only once each
agent's key is registered: a fault line signed before then is of unproven origin, and
capped to a notice, which a scenario would take for the pipeline's mistake. A loaded
machine delays the first registration past the first health results, and one that fails
is tried again a minute later.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from nodemedic.contracts.logs import identity_stream, node_log_group
from world.world import World

AGENTS_UP = 180.0
"""How long the agents may take to ship and to register their keys: seconds when idle; an
agent whose first registration failed tries again a minute later."""


def wait_agents_up(world: World, instance_ids: list[str], timeout: float) -> None:
    """Every agent is up once the classifier has seen its first health results and its key
    is registered: its registration is in its identity stream, where the classifier reads a
    key it has not met. A fault line signed before then is of unproven origin, capped to a
    notice; an agent whose first try failed (a loaded machine) tries again a minute later
    (``agent.config.Config.register_retry``)."""
    logs = world.aws("logs")
    deadline = time.monotonic() + timeout
    missing = set(instance_ids)
    unregistered = set(instance_ids)
    while missing or unregistered:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"agents of {', '.join(sorted(missing))} shipped nothing, and of "
                f"{', '.join(sorted(unregistered))} registered no key, in {timeout:.0f}s; "
                f"see {world.workdir}/nodes/<instance-id>/agent.log"
            )
        time.sleep(0.25)
        with contextlib.suppress(logs.exceptions.ResourceNotFoundException):
            for page in logs.get_paginator("filter_log_events").paginate(
                logGroupName=world.classifier_log_group
            ):
                missing -= {i for i in missing for e in page["events"] if i in e["message"]}
        unregistered -= {i for i in unregistered if _registered(logs, world, i)}


def _registered(logs: Any, world: World, instance_id: str) -> bool:
    with contextlib.suppress(logs.exceptions.ResourceNotFoundException):
        return bool(
            logs.get_log_events(
                logGroupName=node_log_group(world.settings.name),
                logStreamName=identity_stream(instance_id),
                limit=1,
            )["events"]
        )
    return False
