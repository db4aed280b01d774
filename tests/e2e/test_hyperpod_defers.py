"""HyperPod's own recovery is left alone: in a world whose machines are the nodes of a
HyperPod cluster with ``NodeRecovery`` ``Automatic``, listed in ``hyperpod_clusters`` with
``hyperpod_repair`` at its default (``defer``), an Xid 79 is only notified (outcome
``deferred``): the node is never cordoned, rebooted nor replaced, and stays the cluster's."""

from __future__ import annotations

import pytest

from world.observe import Observer, follow
from world.scenarios.hyperpod import CLUSTER
from world.scenarios.kit import FAULT_TIMEOUT, XID_79, history_entries, targets
from world.timeline import Fault, inject
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
NODES = 2
WORLD_SETTINGS = demo_settings(hyperpod_clusters=(CLUSTER,))
WORLD_OPTIONS = {"hyperpod_recovery": "Automatic", "nodes": NODES, "workers": NODES}


def test_an_xid_79_is_left_to_hyperpod_s_automatic_recovery(world: World) -> None:
    (machine,) = targets(world, 1)
    run = inject(world, machine, Fault("xid", "79", "notify", XID_79.title))
    follow(Observer(world), [run], lambda *_: None, timeout=FAULT_TIMEOUT)
    assert run.done, run.steps
    assert run.outcome == "deferred"
    (mail,) = [m.body for m in world.inbox.about(machine.instance_id)]
    assert (mail["outcome"], mail["substrate"]) == ("deferred", "hyperpod")
    code, shown = history_entries(world)
    assert code == 0
    (entry,) = [e for e in shown if e["instance_id"] == machine.instance_id]
    assert "hyperpod_repair is defer" in entry["reason"], entry
    seen = world.watch.history(machine.instance_id, run.written_at)
    assert not [s for s in seen if s.unschedulable or s.tainted]
    assert world.machine_events(machine.instance_id, "reboot") == []
    assert world.machine_events(machine.instance_id, "unhealthy") == []
    assert world.instance_state(machine.instance_id) == "running"
    listed = world.aws("sagemaker").list_cluster_nodes(ClusterName=CLUSTER[0])
    assert machine.instance_id in {n["InstanceId"] for n in listed["ClusterNodeSummaries"]}
