"""Drain rounds that leave pods running, against the real API server: a GPU-level round
(``devices``) evicts only the pods the Node's device record names as holders, and a pod's
drain policy keeps it until it finishes or its grace ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from lambdas.kube.handler import BadRequest
from nodemedic.contracts.kube import (
    DRAIN_GRACE_EVENT_REASON,
    DRAIN_GRACE_KEY,
    DRAIN_POLICY_KEY,
    POD_DEVICES_KEY,
)
from tests.integration.lambdas.kube.test_drain import drain_event
from tests.support.kube import Invoke, Node, bind_pod, device_record, exists, running, wait_for

pytestmark = pytest.mark.kube


def test_a_gpu_level_round_evicts_only_the_pods_holding_the_gpu(
    invoke: Invoke, node: Node, core: client.CoreV1Api, namespace: str
) -> None:
    for name in ("rank-0", "rank-1"):
        bind_pod(core, namespace, name, node.name, limits={"nvidia.com/gpu": "4"})
    bind_pod(core, namespace, "sidecar", node.name)
    wait_for(lambda: len(device_record(core, node.name)) == 2, what="both ranks' GPUs recorded")
    (holder,) = [pod for pod, held in device_record(core, node.name).items() if "5" in held]
    gpu_five = drain_event(node.name) | {"devices": ["5"]}

    first = invoke(gpu_five)
    wait_for(lambda: invoke(gpu_five)["done"], what="the GPU's pods drained")

    assert first["evicted"] == [holder]
    assert [p["name"] for p in first["pods"]] == [holder.split("/")[1]]
    assert not exists(core, *holder.split("/"))
    others = {"rank-0", "rank-1", "sidecar"} - {holder.split("/")[1]}
    assert all(running(core, namespace, name) for name in others)
    wait_for(lambda: holder not in device_record(core, node.name), what="the GPU released")


def test_a_gpu_level_round_without_a_device_record_drains_the_node(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api, namespace: str
) -> None:
    """A Node whose agent publishes no record (no PodResources socket): node-level, as
    before, rather than leaving the pods on the faulty GPU running."""
    bare = new_node(devices={})
    for name in ("a", "b"):
        bind_pod(core, namespace, name, bare.name)
    wait_for(lambda: running(core, namespace, "a") and running(core, namespace, "b"))

    done = invoke(drain_event(bare.name, settle=10) | {"devices": ["0"]})

    assert sorted(done["evicted"]) == [f"{namespace}/a", f"{namespace}/b"]
    assert done["done"]


def test_an_unreadable_device_record_drains_the_node(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api, namespace: str
) -> None:
    """The record is written with the agent's token on its own Node: a 100,000-deep one
    once raised RecursionError in every round and stranded the node at ``draining``."""
    bare = new_node(devices={})
    for name in ("a", "b"):
        bind_pod(core, namespace, name, bare.name)
    deep = "[" * 100_000 + "]" * 100_000
    core.patch_node(bare.name, {"metadata": {"annotations": {POD_DEVICES_KEY: deep}}})
    wait_for(lambda: running(core, namespace, "a") and running(core, namespace, "b"))

    done = invoke(drain_event(bare.name, settle=10) | {"devices": ["0"]})

    assert sorted(done["evicted"]) == [f"{namespace}/a", f"{namespace}/b"]
    assert done["done"]


def test_allow_completion_keeps_a_pod_until_it_finishes(
    invoke: Invoke, node: Node, core: client.CoreV1Api, namespace: str
) -> None:
    policy = {DRAIN_POLICY_KEY: "allow-completion", DRAIN_GRACE_KEY: "300"}
    bind_pod(core, namespace, "eval", node.name, labels=policy)
    bind_pod(core, namespace, "web", node.name)
    wait_for(lambda: running(core, namespace, "eval") and running(core, namespace, "web"))

    first = invoke(drain_event(node.name, settle=10))

    assert first["evicted"] == [f"{namespace}/web"]
    assert first["waiting"] == [f"{namespace}/eval"]
    assert not first["done"], "a waiting pod keeps the round from settling, and the node"
    assert running(core, namespace, "eval")

    core.patch_namespaced_pod_status("eval", namespace, {"status": {"phase": "Succeeded"}})
    last = wait_for(lambda: (r := invoke(drain_event(node.name)))["done"] and r)

    assert last["waiting"] == []
    assert not exists(core, namespace, "eval")


def test_a_policy_waits_no_longer_than_its_grace(
    invoke: Invoke, node: Node, core: client.CoreV1Api, namespace: str
) -> None:
    policy = {DRAIN_POLICY_KEY: "allow-completion", DRAIN_GRACE_KEY: "30"}
    bind_pod(core, namespace, "eval", node.name, annotations=policy)
    wait_for(lambda: running(core, namespace, "eval"))

    assert invoke(drain_event(node.name, started_ago=29))["waiting"] == [f"{namespace}/eval"]
    late = invoke(drain_event(node.name, started_ago=31))

    assert (late["evicted"], late["waiting"]) == ([f"{namespace}/eval"], [])


@pytest.mark.parametrize("devices", ["5", [5], [""]])
def test_a_round_refuses_devices_that_are_not_a_list_of_ids(
    invoke: Invoke, node: Node, core: client.CoreV1Api, namespace: str, devices: object
) -> None:
    bind_pod(core, namespace, "kept", node.name)

    with pytest.raises(BadRequest, match="devices"):
        invoke(drain_event(node.name) | {"devices": devices})

    assert exists(core, namespace, "kept")


@pytest.mark.parametrize("grace", ["nan", "-inf", "1e400", "soon"])
def test_a_grace_that_is_no_number_waits_the_default_and_tells_the_pod(
    invoke: Invoke, node: Node, core: client.CoreV1Api, namespace: str, grace: str
) -> None:
    """A pod may shorten its wait, never break the drain: ``nan`` once raised ValueError in
    every round and stranded the node at ``draining``."""
    policy = {DRAIN_POLICY_KEY: "allow-completion", DRAIN_GRACE_KEY: grace}
    bind_pod(core, namespace, "eval", node.name, annotations=policy)
    wait_for(lambda: running(core, namespace, "eval"))
    said = f"{namespace}/eval: {grace!r}"

    round_ = drain_event(node.name, started_ago=1)
    first, again = invoke(round_), invoke(round_)

    assert (first["waiting"], first["defaulted"]) == ([f"{namespace}/eval"], [said])
    assert (again["waiting"], again["defaulted"]) == ([f"{namespace}/eval"], [said])
    told = [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.reason == DRAIN_GRACE_EVENT_REASON and e.involved_object.name == "eval"
    ]
    assert len(told) == 1, "told once per drain"
    assert told[0].type == "Warning"
    assert DRAIN_GRACE_KEY in told[0].message
    # The default grace (half of the 600 s drain timeout) ends, and the pod goes.
    late = invoke(drain_event(node.name, started_ago=301))
    assert (late["evicted"], late["defaulted"]) == ([f"{namespace}/eval"], [said])
