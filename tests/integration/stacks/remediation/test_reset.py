"""The GPU reset rung, on moto and the real apiserver: a cluster with ``gpu_reset`` on resets
the GPU an Xid names through SSM Run Command (the simulated node runs the very script,
``world.aws.gpus``), gives the node back when the reset verifies, and otherwise reboots it
through the same lock, ledger and escalation rules."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import POD_DEVICES_KEY
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World, our_taints
from tests.support.kube import bind_pod, device_record, exists, holds, running, wait_for
from tests.support.remediation import FAST, NODE_GROUPS, decision
from world.aws.gpus import Behaviour

SSM_GROUPS = ("unmanaged", "unreported", "throttled")
"""The groups ``_reset_where`` makes: ``g6-reset-<behaviour>``."""
RESETS = ClusterSettings(
    name="resets",
    gpu_reset=True,
    node_groups=(*NODE_GROUPS, *(f"g6-reset-{b}" for b in SSM_GROUPS), "g6-reset-two-gpus"),
    post_reboot_deep_check=False,
    **FAST,
)
"""Resets GPUs; a reboot gives the node back at its new boot id."""
G6: dict[str, Any] = {"instance_type": "g6.12xlarge", "devices": {"nvidia.com/gpu": "4"}}
XID_46 = "NVRM: Xid (PCI:0000:2b:00): 46, pid='<unknown>', name=<unknown>, GPU stopped processing"
GPU_ID = "00000000:2B:00.0"
"""The Xid's GPU as ``nvidia-smi`` names it."""


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (RESETS,)


def _reset_decision(instance_id: str, first_seen: datetime | None = None) -> dict[str, Any]:
    return decision(
        instance_id,
        "nvidia-xid-46",
        cluster="resets",
        line=XID_46,
        gpu_reset=True,
        first_seen=first_seen,
    )


def _given_back(world: World, instance_id: str) -> None:
    node = world.node(instance_id)
    assert node is not None
    assert not node.spec.unschedulable
    assert our_taints(node) == []


def test_a_gpu_reset_that_verifies_gives_the_node_back_without_a_reboot(world: World) -> None:
    sick, _ = world.group("g6-reset", 2, **G6)
    pipeline = world.pipelines["resets"]
    since = time.time()

    world.ship("resets", sick, XID_46)

    (execution,) = pipeline.executions(sick)
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    ledger = pipeline.item(sick, f"decision#{execution.rsplit(':', 1)[1]}")
    assert ledger is not None
    assert (ledger["action"], ledger["outcome"]) == ("reset", "reset")
    assert "escalation" not in ledger
    assert world.hypervisor.reboots.count(sick) == 0
    assert (sick, "Success") in world.gpus.resets
    assert any(
        s.unschedulable and s.tainted and s.health == "Unschedulable"
        for s in world.seen(sick, since)
    ), "cordoned, tainted and labelled while its GPU was reset"
    _given_back(world, sick)
    (mail,) = pipeline.messages(sick)
    assert mail["outcome"] == "reset"
    assert {"marked", "drained", "reset", "cleared"} <= set(mail["actions"])


def test_a_gpu_reset_that_fails_falls_back_to_a_reboot(world: World) -> None:
    sick, _ = world.group("g6-reset-fails", 2, **G6)
    world.gpus.behave(sick, "reset-fails", GPU_ID)
    pipeline = world.pipelines["resets"]
    record = _reset_decision(sick)

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["action"], ledger["outcome"], ledger["escalated"]) == ("reset", "rebooted", True)
    assert ledger["escalation"].startswith(f"GPU reset of {GPU_ID} Failed: ")
    assert "Unknown Error" in ledger["escalation"]
    assert world.gpus.resets.count((sick, "Failed")) == 1
    assert world.hypervisor.reboots.count(sick) == 1
    _given_back(world, sick)


def test_a_second_reset_of_a_gpu_within_the_escalation_window_is_a_reboot(
    world: World,
) -> None:
    sick, _ = world.group("g6-reset-twice", 2, **G6)
    pipeline = world.pipelines["resets"]
    # The first line 20 minutes old: the second is a decision of its own, not a duplicate.
    first = _reset_decision(sick, datetime.now(UTC) - timedelta(minutes=20))
    assert pipeline.run(first)["status"] == "SUCCEEDED"
    assert pipeline.ledger(first)["outcome"] == "reset"  # type: ignore[index]

    again = _reset_decision(sick)
    assert again["decision_id"] != first["decision_id"]
    assert pipeline.run(again)["status"] == "SUCCEEDED"

    ledger = pipeline.ledger(again)
    assert ledger is not None
    assert (ledger["outcome"], ledger["escalated"]) == ("rebooted", True)
    assert ledger["escalation"] == (
        f"GPU {GPU_ID} was reset less than escalation_window ({RESETS.escalation_window} s) ago"
    )
    assert [i for i, _ in world.gpus.resets].count(sick) == 1, "no second reset"
    assert world.hypervisor.reboots.count(sick) == 1
    _given_back(world, sick)


def test_an_instance_type_that_cannot_reset_one_gpu_is_rebooted_at_once(world: World) -> None:
    sick, _ = world.group("p5-reset", 2, **GPU)
    pipeline = world.pipelines["resets"]
    record = _reset_decision(sick)

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert ledger["outcome"] == "rebooted"
    assert ledger["reason"].startswith("instance type p5.48xlarge cannot reset one GPU; ")
    assert sick not in [i for i, _ in world.gpus.resets]
    assert world.hypervisor.reboots.count(sick) == 1
    _given_back(world, sick)


def _two_ranks(world: World, core: client.CoreV1Api, namespace: str, instance_id: str) -> None:
    """``rank-0`` on the GPU the Xid names (index 0, ``GPU_ID``), ``rank-1`` on another."""
    node = world.nodes[instance_id]
    for rank in ("rank-0", "rank-1"):
        bind_pod(core, namespace, rank, node, limits={"nvidia.com/gpu": "1"})
        wait_for(partial(holds, core, node, f"{namespace}/{rank}"), what="its GPU recorded")
    assert GPU_ID in device_record(core, node)[f"{namespace}/rank-0"]


def test_a_reset_evicts_only_the_pods_on_its_gpu(
    world: World, core: client.CoreV1Api, namespace: str
) -> None:
    sick, _ = world.group("g6-reset-partial", 2, **G6)
    _two_ranks(world, core, namespace, sick)
    record = _reset_decision(sick)

    assert world.pipelines["resets"].run(record)["status"] == "SUCCEEDED"

    assert world.pipelines["resets"].ledger(record)["outcome"] == "reset"  # type: ignore[index]
    assert not exists(core, namespace, "rank-0")
    assert running(core, namespace, "rank-1"), "the pod on another GPU never stopped"
    _given_back(world, sick)


def test_a_reset_that_gives_way_to_a_reboot_drains_the_rest_first(
    world: World, core: client.CoreV1Api, namespace: str
) -> None:
    sick, _ = world.group("g6-reset-partial-fails", 2, **G6)
    world.gpus.behave(sick, "reset-fails", GPU_ID)
    _two_ranks(world, core, namespace, sick)
    record = _reset_decision(sick)

    assert world.pipelines["resets"].run(record)["status"] == "SUCCEEDED"

    assert world.pipelines["resets"].ledger(record)["outcome"] == "rebooted"  # type: ignore[index]
    assert world.hypervisor.reboots.count(sick) == 1
    assert not exists(core, namespace, "rank-1"), "evicted before the reboot, not killed by it"


def _reset_where(world: World, behaviour: Behaviour) -> tuple[str, dict[str, Any]]:
    """A reset of an instance whose GPU or SSM so behaves, run to its end: the instance and
    its decision's ledger record."""
    sick, _ = world.group(f"g6-reset-{behaviour}", 2, **G6)
    world.gpus.behave(sick, behaviour, GPU_ID)
    pipeline = world.pipelines["resets"]
    record = _reset_decision(sick)
    assert pipeline.run(record)["status"] == "SUCCEEDED"
    ledger = pipeline.ledger(record)
    assert ledger is not None
    return sick, ledger


@pytest.mark.parametrize(
    ("behaviour", "refused", "escalation"),
    [
        # A node SSM does not manage: refused once, not sent again.
        (
            "unmanaged",
            ["InvalidInstanceId"],
            f"SSM refused the GPU reset of {GPU_ID}: Ssm.InvalidInstanceIdException",
        ),
        (
            "unreported",
            [],
            f"SSM did not say how the GPU reset of {GPU_ID} went: "
            "Ssm.InvocationDoesNotExistException",
        ),
    ],
)
def test_a_reset_ssm_refuses_or_never_tells_of_gives_way_to_a_reboot(
    world: World, behaviour: Behaviour, refused: list[str], escalation: str
) -> None:
    sick, ledger = _reset_where(world, behaviour)

    assert (ledger["action"], ledger["outcome"], ledger["escalated"]) == ("reset", "rebooted", True)
    assert ledger["escalation"] == escalation
    assert [code for i, code in world.gpus.refused if i == sick] == refused
    assert world.hypervisor.reboots.count(sick) == 1
    _given_back(world, sick)


def test_a_throttled_reset_is_sent_again_and_heals_the_gpu(world: World) -> None:
    sick, ledger = _reset_where(world, "throttled")

    assert ledger["outcome"] == "reset"
    assert [code for i, code in world.gpus.refused if i == sick] == ["ThrottlingException"]
    assert (sick, "Success") in world.gpus.resets
    assert world.hypervisor.reboots.count(sick) == 0
    _given_back(world, sick)


def test_the_same_xid_on_two_gpus_in_one_window_resets_both(world: World) -> None:
    sick, _ = world.group("g6-reset-two-gpus", 2, **G6)
    pipeline = world.pipelines["resets"]

    for count, bus in enumerate(("2b", "3c"), 1):
        world.ship("resets", sick, XID_46.replace("PCI:0000:2b:00", f"PCI:0000:{bus}:00"))
        started = pipeline.executions(sick)
        assert len(started) == count, "the second GPU's fault is not a duplicate"
        assert pipeline.finish(started[-1])["status"] == "SUCCEEDED"
    for execution in pipeline.executions(sick):
        ledger = pipeline.item(sick, f"decision#{execution.rsplit(':', 1)[1]}")
        assert ledger is not None
        assert (ledger["action"], ledger["outcome"]) == ("reset", "reset")
    assert world.gpus.resets.count((sick, "Success")) == 2
    assert world.hypervisor.reboots.count(sick) == 0


def test_an_unreadable_device_record_resets_after_draining_the_whole_node(
    world: World, core: client.CoreV1Api, namespace: str
) -> None:
    """The record is the agent's write on its own Node: a 100,000-deep one once raised
    RecursionError in every drain round, failing the execution at ``draining`` and leaving
    the node cordoned, tainted and parked."""
    sick, _ = world.group("g6-reset-deep-record", 2, **G6)
    node = world.nodes[sick]
    for name in ("a", "b"):
        bind_pod(core, namespace, name, node)
        wait_for(partial(running, core, namespace, name), what=f"{name} running")
    deep = "[" * 100_000 + "]" * 100_000
    core.patch_node(node, {"metadata": {"annotations": {POD_DEVICES_KEY: deep}}})
    record = _reset_decision(sick)

    assert world.pipelines["resets"].run(record)["status"] == "SUCCEEDED"

    assert world.pipelines["resets"].ledger(record)["outcome"] == "reset"  # type: ignore[index]
    assert not exists(core, namespace, "a") and not exists(core, namespace, "b")
    _given_back(world, sick)
