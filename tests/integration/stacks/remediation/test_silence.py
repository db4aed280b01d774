"""Hearing silence on moto and the real apiserver: a Ready node whose agent stops shipping
heartbeats is published as ``SilentNodes`` and notified once, even while someone holding the
agents' credential writes unsigned heartbeats for it; a node that ships is not."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from nodemedic.contracts.logs import heartbeat_message
from tests.support.flow import GPU, World
from tests.support.kube import wait_for
from tests.support.remediation import Pipeline, datapoints

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

INTERVAL = 4
"""The agents' heartbeat interval here: silent after twelve seconds, far more than a
reconcile run takes after the last heartbeat."""


LINE = heartbeat_message({"interval": INTERVAL, "credential_failures": 0, "spool_bytes": 0})
"""What the node's agent ships every interval on its kmsg stream, signed."""


def _beat(world: World, instance_id: str) -> None:
    world.ship("demo", instance_id, LINE)


def _forge(world: World, instance_id: str) -> None:
    """A heartbeat for the node written unsigned with the agents' shared credential."""
    world.put("demo", instance_id, LINE, int(time.time() * 1000))


@contextlib.contextmanager
def shipping(world: World, instance_id: str) -> Iterator[None]:
    """The node's agent ships a heartbeat every half interval while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(INTERVAL / 2):
            _beat(world, instance_id)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _silent(pipeline: Pipeline) -> dict[str, Any]:
    return dict(pipeline.scheduled(pipeline.reconcile, "List silent nodes")["silent"])


def _told(pipeline: Pipeline, node: str) -> list[str]:
    return pipeline.told("nodemedic demo: agents silent", node)


def test_a_ready_node_whose_agent_stops_shipping_is_published_and_told_once(
    world: World,
) -> None:
    quiet, talking = world.group("p5-silent", 2, **GPU)
    pipeline = world.pipelines["demo"]
    for instance in (quiet, talking):
        _beat(world, instance)
    wait_for(
        lambda: all(pipeline.item("heartbeat", i) for i in (quiet, talking)),
        timeout=60,
        what="both heartbeats recorded",
    )
    # quiet's agent stops, but its heartbeats are forged; talking's agent keeps shipping
    # while three intervals pass, and on until the reconcile has looked, however long a
    # busy machine takes it to get there.
    with shipping(world, talking):
        deadline = time.monotonic() + 3.5 * INTERVAL
        while time.monotonic() < deadline:
            time.sleep(INTERVAL / 2)
            _forge(world, quiet)
        first = _silent(pipeline)

    node_quiet, node_talking = world.nodes[quiet], world.nodes[talking]
    assert node_quiet in first["nodes"] and node_talking not in first["nodes"]
    assert datapoints("NodeMedic", "SilentNodes", Cluster="demo")[-1] == first["count"] >= 1
    (told,) = _told(pipeline, node_quiet)
    assert f"{node_quiet} ({quiet}): last heard " in told
    assert "credential_failures 0" in told and node_talking not in told

    # The next run counts it again, but does not tell it again.
    again = _silent(pipeline)
    assert node_quiet in again["nodes"]
    assert len(_told(pipeline, node_quiet)) == 1

    # Its agent is back: no longer silent, and a later silence would be told anew.
    _beat(world, quiet)
    wait_for(
        lambda: "notified_at" not in (pipeline.item("heartbeat", quiet) or {"notified_at": 1}),
        timeout=60,
        what="quiet heard again",
    )
    assert node_quiet not in _silent(pipeline)["nodes"]
