"""drain rounds against the real API server: PDBs, DaemonSets, mirror pods, the timeout."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.support.kube import Invoke, Node, bind_pod, exists, owner, pdb, running, wait_for

pytestmark = pytest.mark.kube


def drain_event(
    node: str, *, started_ago: float = 0, timeout: int = 600, settle: int = 0, force: bool = False
) -> dict[str, Any]:
    started = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=started_ago)
    return {
        "op": "drain",
        "node": node,
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "timeout_seconds": timeout,
        "settle_seconds": settle,
        "force": force,
    }


def guarded_pod(
    core: client.CoreV1Api, admin: client.ApiClient, namespace: str, name: str, node: Node
) -> None:
    """A pod on ``node`` that its PodDisruptionBudget allows no eviction of."""
    app = {"app": name}
    bind_pod(core, namespace, name, node.name, labels=app)
    budget = pdb(admin, namespace, name, app, minAvailable=1)
    wait_for(lambda: (budget() or {}).get("currentHealthy") == 1, what="PDB status")


def test_drain_waits_for_the_budget_then_evicts(
    invoke: Invoke,
    new_node: Callable[..., Node],
    core: client.CoreV1Api,
    admin: client.ApiClient,
    namespace: str,
) -> None:
    sick, healthy = new_node(), new_node()
    app = {"app": "llama"}
    rs = owner(admin, namespace, "ReplicaSet", "llama-7d9f")
    for name, on in (("llama-a", sick), ("llama-b", healthy)):
        bind_pod(core, namespace, name, on.name, labels=app, owner=rs)
    budget = pdb(admin, namespace, "llama", app, minAvailable=2)
    wait_for(lambda: (budget() or {}).get("currentHealthy") == 2, what="PDB status")

    blocked = invoke(drain_event(sick.name))

    assert blocked["blocked"] == [f"{namespace}/llama-a"]
    assert (blocked["evicted"], blocked["done"], blocked["remaining"]) == ([], False, 1)
    assert running(core, namespace, "llama-a")

    # The replacement replica comes up elsewhere; the budget then allows one disruption.
    bind_pod(core, namespace, "llama-c", healthy.name, labels=app, owner=rs)
    wait_for(lambda: budget().get("disruptionsAllowed") == 1, what="a disruption allowed")
    evicted = invoke(drain_event(sick.name))

    assert evicted["evicted"] == [f"{namespace}/llama-a"]
    assert evicted["blocked"] == []
    assert evicted["pods"] == [
        {
            "namespace": namespace,
            "name": "llama-a",
            "owner_kind": "ReplicaSet",
            "owner_name": "llama-7d9f",
        }
    ]
    finished = wait_for(lambda: (r := invoke(drain_event(sick.name)))["done"] and r)
    assert finished["remaining"] == 0
    assert exists(core, namespace, "llama-b")


def test_drain_leaves_daemonset_and_mirror_pods_and_names_the_jobs(
    invoke: Invoke, node: Node, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    job = owner(admin, namespace, "Job", "train-llama-70b")
    ds = owner(admin, namespace, "DaemonSet", "dcgm-exporter")
    bind_pod(core, namespace, "train-llama-70b-worker-3", node.name, owner=job)
    bind_pod(core, namespace, "dcgm-exporter-x7k2p", node.name, owner=ds)
    bind_pod(
        core,
        namespace,
        f"static-{node.name}",
        node.name,
        annotations={"kubernetes.io/config.mirror": "0123abcd"},
    )
    wait_for(lambda: running(core, namespace, "train-llama-70b-worker-3"))

    first = invoke(drain_event(node.name))
    last = wait_for(lambda: (r := invoke(drain_event(node.name)))["done"] and r)

    assert first["evicted"] == [f"{namespace}/train-llama-70b-worker-3"]
    assert first["pods"] == [
        {
            "namespace": namespace,
            "name": "train-llama-70b-worker-3",
            "owner_kind": "Job",
            "owner_name": "train-llama-70b",
        }
    ]
    assert last["pods"] == []
    assert not exists(core, namespace, "train-llama-70b-worker-3")
    assert exists(core, namespace, "dcgm-exporter-x7k2p")
    assert exists(core, namespace, f"static-{node.name}")


def test_a_forced_drain_deletes_what_is_left_after_the_timeout(
    invoke: Invoke, node: Node, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    guarded_pod(core, admin, namespace, "solo", node)
    assert invoke(drain_event(node.name, started_ago=60, timeout=120, force=True))["blocked"]

    overdue = invoke(drain_event(node.name, started_ago=180, timeout=120, force=True))

    assert overdue["deleted"] == [f"{namespace}/solo"]
    assert (overdue["done"], overdue["remaining"]) == (True, 0)
    assert not exists(core, namespace, "solo")


def test_an_unforced_drain_never_deletes_what_its_budget_protects(
    invoke: Invoke, node: Node, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    """Before a reboot, or without ``force_drain``: a pod its PodDisruptionBudget protects
    stays, however long the drain has run; the node is not drained."""
    guarded_pod(core, admin, namespace, "solo", node)

    overdue = invoke(drain_event(node.name, started_ago=3600, timeout=120))

    assert overdue["deleted"] == []
    assert overdue["blocked"] == [f"{namespace}/solo"]
    assert (overdue["done"], overdue["remaining"]) == (False, 1)
    assert exists(core, namespace, "solo")


def test_a_settling_round_sees_pods_that_stop_at_once_gone(
    invoke: Invoke, node: Node, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    job = owner(admin, namespace, "Job", "train-llama-8b")
    for worker in ("w-0", "w-1"):
        bind_pod(core, namespace, worker, node.name, owner=job)
    wait_for(lambda: running(core, namespace, "w-0") and running(core, namespace, "w-1"))

    round_ = invoke(drain_event(node.name, settle=10))

    assert sorted(round_["evicted"]) == [f"{namespace}/w-0", f"{namespace}/w-1"]
    assert (round_["done"], round_["remaining"]) == (True, 0)
    assert not exists(core, namespace, "w-0") and not exists(core, namespace, "w-1")


def test_a_round_blocked_by_a_budget_does_not_settle(
    invoke: Invoke, node: Node, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    guarded_pod(core, admin, namespace, "kept", node)

    began = time.monotonic()
    round_ = invoke(drain_event(node.name, settle=600))

    assert time.monotonic() - began < 60, "a blocked pod will not go by itself: no waiting"
    assert (round_["blocked"], round_["done"], round_["remaining"]) == (
        [f"{namespace}/kept"],
        False,
        1,
    )


def test_drain_of_an_empty_node_is_done(invoke: Invoke, node: Node) -> None:
    assert invoke(drain_event(node.name)) == {
        "done": True,
        "remaining": 0,
        "evicted": [],
        "blocked": [],
        "deleted": [],
        "waiting": [],
        "defaulted": [],
        "pods": [],
    }


def test_drain_refuses_a_bad_start_time(invoke: Invoke, node: Node) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        invoke(drain_event(node.name) | {"started_at": "yesterday"})
