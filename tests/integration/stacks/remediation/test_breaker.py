"""The cluster's breaker trips on a limit, holds what comes next with one page, and recovers
after its cooldown or when an operator resets it (``nodemedic.remediate.breaker``).

Its tests run on a cluster of their own, ``guarded``, whose limits are tight (one
replacement per group per hour, one remediation in flight across the cluster) and whose
waits are seconds: a tripped breaker holds every decision of its cluster, so the other
flow tests' cluster must never trip. Each test starts with the breaker reset.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from console.cli import main
from nodemedic.contracts.kube import AWAITING_DEEP_CHECK_OUTCOME, TAINT_KEY
from nodemedic.remediate.planned import (
    SPOT,
    SPOT_DETAIL_TYPE,
    SPOT_NOTICE,
    Notice,
    planned_decision,
)
from nodemedic.settings import ClusterSettings
from stacks.pipeline import stack_name
from stacks.synth import synth_template
from tests.support.flow import GPU, NEURON, World, asg_instance, our_taints
from tests.support.kube import bind_pod, pdb, wait_for
from tests.support.remediation import (
    FAST,
    NODE_GROUPS,
    Pipeline,
    datapoints,
    decision,
)
from tests.support.windows import within_one_hour
from world.aws.stack import deploy

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

GUARDED = ClusterSettings(
    name="guarded",
    node_groups=(*NODE_GROUPS, "p5-spot", "p5-after-spot"),
    max_in_flight=1,
    replacements_per_hour=1,
    replacements_per_day=1,
    breaker_cooldown=4,
    # The breaker alone: these tests send one kind of fault to several nodes of a group,
    # which fleet correlation (tested in test_fleet.py) would hold as a fleet event. A held
    # decision waits 45 s for the slot: a busy machine takes seconds a step to bring a
    # rebooted node back and give its slot up, and the cooldown follows. A reboot a test
    # holds (``Hypervisor.hang``) is not given up for a replacement within seconds.
    **{
        **FAST,
        "breaker_hold": 45,
        "reboot_timeout": 120,
        "fleet_min_nodes": 1000,
        "fleet_min_percent": 0,
    },
)


@pytest.fixture(scope="module")
def guarded(world: World) -> Pipeline:
    return Pipeline(deploy(synth_template(GUARDED), stack_name=stack_name(GUARDED)))


def _breaker(pipeline: Pipeline, verb: str) -> dict[str, Any]:
    """``nodemedic breaker <verb> --cluster guarded``, as an operator runs it."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["breaker", verb, "--cluster", GUARDED.name, "--table", pipeline.table])
    assert code == 0
    shown: dict[str, Any] = json.loads(out.getvalue())
    return shown


@pytest.fixture(autouse=True)
def closed(guarded: Pipeline) -> None:
    _breaker(guarded, "reset")


@pytest.fixture
def one_window() -> None:
    """The rate tests' starts all count in one clock hour (and so one UTC day)."""
    within_one_hour(300)


def _pages(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [
        {"subject": n.subject, **n.body}
        for n in pipeline.inbox.messages()
        if n.outcome == "tripped"
    ]


def _held(pipeline: Pipeline, instance: str) -> bool:
    return any(m["outcome"] == "held" for m in pipeline.messages(instance))


def _untouched(world: World, instance: str) -> None:
    node = world.node(instance)
    assert node is not None and not node.spec.unschedulable
    assert asg_instance(instance)["HealthStatus"] == "Healthy"


def test_a_group_past_its_hourly_replacements_trips_and_holds_the_rest_with_one_page(
    world: World, guarded: Pipeline, one_window: None
) -> None:
    first, second, third, _ = world.group("trn1-rate", 4, **NEURON)
    pages_before = len(_pages(guarded))
    # One record: made twice, the two could fall either side of a window's edge and so
    # name two decisions.
    replaced = decision(first, cluster="guarded")
    assert guarded.run(replaced)["status"] == "SUCCEEDED"
    assert (guarded.ledger(replaced) or {})["outcome"] == "replaced"

    records = [decision(i, cluster="guarded") for i in (second, third)]
    results = [guarded.finish(guarded.start(r)) for r in records]

    assert [r["status"] for r in results] == ["SUCCEEDED", "SUCCEEDED"]
    assert [(guarded.ledger(r) or {})["outcome"] for r in records] == ["held", "held"]
    for instance in (second, third):
        _untouched(world, instance)
        assert _held(guarded, instance)
    pages = _pages(guarded)[pages_before:]
    assert len(pages) == 1, pages
    assert "replace limit 1 per hour" in pages[0]["reason"]
    assert pages[0]["subject"] == "nodemedic breaker tripped: cluster guarded"
    assert datapoints("NodeMedic", "BreakerTripped", Cluster="guarded")
    shown = _breaker(guarded, "status")
    assert shown["state"] in ("tripped", "cooled")
    assert {"group": "trn1-rate", "action": "replace", "started": 1} in [
        {k: r[k] for k in ("group", "action", "started")} for r in shown["rates"]
    ]


def test_the_cluster_cap_holds_another_group_and_the_breaker_recovers_after_its_cooldown(
    world: World, guarded: Pipeline
) -> None:
    busy, _ = world.group("p5-cap-a", 2, **GPU)
    other, _ = world.group("p5-cap-b", 2, **GPU)
    pages_before = len(_pages(guarded))
    # The busy node's reboot lasts until the other is held: a busy machine may otherwise
    # bring it back before the other decision reaches the breaker.
    world.hypervisor.hang(busy)
    running = guarded.start(decision(busy, "nvidia-xid-48", cluster="guarded"))
    wait_for(lambda: bool((world.node(busy) or client.V1Node()).spec.unschedulable), what="cordon")

    waiting = decision(other, "nvidia-xid-48", cluster="guarded")
    execution = guarded.start(waiting)
    wait_for(lambda: _held(guarded, other), timeout=120, what="the cluster cap's hold")
    world.hypervisor.resume(busy)
    result = guarded.finish(execution)

    assert guarded.finish(running)["status"] == "SUCCEEDED"
    assert result["status"] == "SUCCEEDED"
    # Held while the other group's reboot was in flight; rebooted once it was back and the
    # cooldown had passed.
    (page,) = _pages(guarded)[pages_before:]
    assert "max_in_flight 1" in page["reason"]
    # Back at its new boot id, it waits for its deep check (post_reboot_deep_check).
    assert (guarded.ledger(waiting) or {})["outcome"] == AWAITING_DEEP_CHECK_OUTCOME
    assert _breaker(guarded, "status")["state"] == "closed"


def test_breaker_reset_reopens_a_tripped_breaker_at_once(
    world: World, guarded: Pipeline, one_window: None
) -> None:
    first, second, _ = world.group("trn1-reset", 3, **NEURON)
    assert guarded.run(decision(first, cluster="guarded"))["status"] == "SUCCEEDED"
    held = decision(second, cluster="guarded")
    execution = guarded.start(held)
    # Through the quarantine first: on a loaded machine its states alone may take a minute.
    wait_for(lambda: _held(guarded, second), timeout=90, what="hold")
    shown = _breaker(guarded, "status")
    # Tripped, or cooled where a round of the hold (a quarantined node's re-reads its fleet
    # window) outlasted the 4 s cooldown: either way not closed until an admission or a reset.
    tripped = ("tripped", "cooled")
    assert shown["state"] in tripped and "replace limit 1" in shown["reason"]

    reset = _breaker(guarded, "reset")

    assert (reset["reset"], reset["was"] in tripped, reset["state"]) == (True, True, "closed")
    assert guarded.finish(execution)["status"] == "SUCCEEDED"
    assert (guarded.ledger(held) or {})["outcome"] == "replaced"


def _spot_warning(instance: str) -> dict[str, Any]:
    """The planned decision a Spot interruption warning for ``instance`` makes."""
    now = datetime.now(UTC)
    deadline = now + timedelta(seconds=SPOT_NOTICE)
    notice = Notice(SPOT, SPOT_DETAIL_TYPE, f"warning-{instance}", (instance,), "", deadline)
    return planned_decision(GUARDED.name, instance, notice, lead_time=0, now=now)


def test_aws_notices_neither_use_nor_trip_the_fault_breaker(
    world: World, guarded: Pipeline
) -> None:
    reclaimed = world.group("p5-spot", 3, **GPU)
    sick, _ = world.group("p5-after-spot", 2, **GPU)
    pages_before = len(_pages(guarded))

    warnings = [_spot_warning(instance) for instance in reclaimed]
    for warning in warnings:
        assert guarded.run(warning)["status"] == "SUCCEEDED"
    genuine = decision(sick, "nvidia-xid-79", cluster="guarded")
    assert guarded.run(genuine)["status"] == "SUCCEEDED"

    # Three replacements of one group past replacements_per_hour 1, with max_in_flight 1:
    # none of them counted, the genuine fault after them replaced at once.
    assert [(guarded.ledger(w) or {}).get("outcome") for w in warnings] == ["replaced"] * 3
    assert (guarded.ledger(genuine) or {})["outcome"] == "replaced"
    assert not any(_held(guarded, i) for i in (*reclaimed, sick))
    assert _pages(guarded)[pages_before:] == []
    assert _breaker(guarded, "status")["state"] == "closed"


# Last: the node it leaves out stays counted for the rest of the module.
def test_a_node_a_failed_remediation_left_out_counts_against_the_cluster_cap(
    world: World, guarded: Pipeline, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    sick, _ = world.group("trn1-parked", 2, **NEURON)
    other, _ = world.group("p5-parked", 2, **GPU)
    # A pod two budgets select cannot be evicted: the drain fails, the node stays out.
    app = {"app": "bert"}
    bind_pod(core, namespace, "bert-0", world.nodes[sick], labels=app)
    for name in ("bert-a", "bert-b"):
        pdb(admin, namespace, name, app, maxUnavailable=1)
    assert guarded.run(decision(sick, cluster="guarded"))["status"] == "FAILED"

    later = decision(other, "nvidia-xid-48", cluster="guarded")
    execution = guarded.start(later)
    wait_for(lambda: _held(guarded, other), what="hold")

    assert sick in _breaker(guarded, "status")["in_flight"]
    guarded.sfn.stop_execution(executionArn=execution)
    # Held, not repaired: its instance untouched, the node only quarantined meanwhile.
    node = world.node(other)
    assert node is not None and node.spec.unschedulable
    assert our_taints(node) == [f"{TAINT_KEY}=nvidia-xid-48:NoSchedule"]
    assert asg_instance(other)["HealthStatus"] == "Healthy"
