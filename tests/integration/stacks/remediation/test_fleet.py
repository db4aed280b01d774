"""Fleet correlation end to end, on the synthesized state machine in moto and the real
apiserver: the same fault on many nodes of a group at once is held (nothing rebooted or
replaced, one mail listing the nodes, the nodes given back marked); the same fault spread
beyond ``fleet_window``, or different faults together, are remediated node by node.

The acting cluster's fleet settings (``tests.support.remediation.FAST``): windows of 15 s,
a settle of 2 s, and the defaults' ``fleet_min_nodes`` 3 and ``fleet_min_percent`` 50."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import FLEET_CONDITION, FLEET_LABEL, HEALTH_LABEL
from tests.support.flow import NEURON, World, asg_instance, condition, our_taints
from tests.support.kube import wait_for
from tests.support.remediation import ACTING, Pipeline, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]
GROUP_SIZE = 8
"""Three of eight nodes: ``fleet_min_nodes`` reached, ``fleet_min_percent`` not."""


def _boot_id(node: client.V1Node | None) -> str:
    assert node is not None
    return str(node.status.node_info.boot_id)


def _run_all(pipeline: Pipeline, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    executions = [pipeline.start(record) for record in records]
    results = [pipeline.finish(execution) for execution in executions]
    assert [r["status"] for r in results] == ["SUCCEEDED"] * len(records), [
        pipeline.ledger(record) for record in records
    ]
    return [pipeline.ledger(record) or {} for record in records]


def _fleet_mail(pipeline: Pipeline, instance_ids: list[str]) -> list[dict[str, Any]]:
    return [
        m
        for i in instance_ids
        for m in pipeline.messages(i)
        if m["subject"].startswith("nodemedic fleet event")
    ]


def _window(pipeline: Pipeline, group: str, fault_id: str) -> dict[str, Any] | None:
    return pipeline.item(f"group#{group}", f"fleet#{fault_id}")


def _sighted(pipeline: Pipeline, group: str, instance: str) -> bool:
    return instance in (_window(pipeline, group, "neuron-dma-error") or {}).get("nodes", [])


def _declared(pipeline: Pipeline, group: str) -> bool:
    return (_window(pipeline, group, "neuron-dma-error") or {}).get("verdict") == "fleet"


def test_the_same_fault_on_k_nodes_at_once_is_held_mailed_once_and_given_back(
    world: World,
) -> None:
    ids = world.group("trn1-fleet", GROUP_SIZE, **NEURON)
    sick = ids[: ACTING.fleet_min_nodes]
    boots = {i: _boot_id(world.node(i)) for i in sick}
    pipeline = world.pipelines["demo"]

    ledgers = _run_all(pipeline, [decision(i) for i in sick])

    assert [ledger["outcome"] for ledger in ledgers] == ["fleet"] * len(sick)
    assert all("held for a fleet event" in ledger["reason"] for ledger in ledgers)
    for instance in sick:
        # Nothing rebooted or replaced ...
        assert asg_instance(instance)["HealthStatus"] == "Healthy"
        node = world.node(instance)
        assert node is not None and _boot_id(node) == boots[instance]
        # ... and the node given back, marked.
        assert not node.spec.unschedulable
        assert our_taints(node) == []
        assert node.metadata.labels[FLEET_LABEL] == "neuron-dma-error"
        assert node.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"
        assert condition(node, FLEET_CONDITION).status == "True"
        assert condition(node, "NeuronHasError").status == "True"
    (mail,) = _fleet_mail(pipeline, sick)
    assert mail["subject"] == "nodemedic fleet event: neuron-dma-error on 3 nodes of trn1-fleet"
    assert sorted(mail["nodes"]) == sorted(sick)
    assert mail["outcome"] == "fleet" and mail["count"] == len(sick)
    # Besides the breaker's holds, only the fleet event's mail: no node's report of its own.
    mailed = [m["outcome"] for i in sick for m in pipeline.messages(i) if m["outcome"] != "held"]
    assert mailed == ["fleet"]
    window = _window(pipeline, "trn1-fleet", "neuron-dma-error")
    assert window is not None and window["verdict"] == "fleet"


def test_a_later_sighting_of_a_declared_fleet_event_is_never_cordoned(world: World) -> None:
    ids = world.group("trn1-fleet-late", GROUP_SIZE, **NEURON)
    first, late = ids[: ACTING.fleet_min_nodes], ids[ACTING.fleet_min_nodes]
    pipeline = world.pipelines["demo"]
    executions = [pipeline.start(decision(i)) for i in first]
    # As soon as the event is declared, well within its window: the late one joins it.
    wait_for(partial(_declared, pipeline, "trn1-fleet-late"), what="the declaration")
    since = time.time()

    (ledger,) = _run_all(pipeline, [decision(late)])
    assert [pipeline.finish(e)["status"] for e in executions] == ["SUCCEEDED"] * len(first)

    assert ledger["outcome"] == "fleet"
    assert not any(s.unschedulable for s in world.seen(late, since))
    node = world.node(late)
    assert node is not None and node.metadata.labels[FLEET_LABEL] == "neuron-dma-error"
    assert len(_fleet_mail(pipeline, [*first, late])) == 1


def test_the_same_fault_spread_beyond_the_window_is_remediated_node_by_node(
    world: World,
) -> None:
    ids = world.group("trn1-spread", GROUP_SIZE, **NEURON)
    sick = ids[: ACTING.fleet_min_nodes]
    pipeline = world.pipelines["demo"]
    executions = []
    for instance in sick:
        executions.append(pipeline.start(decision(instance)))
        wait_for(partial(_sighted, pipeline, "trn1-spread", instance), what="the sighting")
        # The next one comes once this one's window is over: counted from when the window
        # opened, which a busy machine makes seconds later than the start.
        opened = int((_window(pipeline, "trn1-spread", "neuron-dma-error") or {})["first_at"])
        time.sleep(max(0.0, opened + ACTING.fleet_window + 1 - time.time()))

    results = [pipeline.finish(execution) for execution in executions]

    assert [r["status"] for r in results] == ["SUCCEEDED"] * len(sick)
    for instance in sick:
        assert asg_instance(instance)["HealthStatus"] == "Unhealthy"
        assert any(m["outcome"] == "replaced" for m in pipeline.messages(instance))
    assert _fleet_mail(pipeline, sick) == []
    # Each opened a window of its own.
    window = _window(pipeline, "trn1-spread", "neuron-dma-error")
    assert window is not None and window["nodes"] == [sick[-1]]


def test_different_faults_on_nodes_at_once_are_not_merged(world: World) -> None:
    ids = world.group("trn1-mixed", GROUP_SIZE, **NEURON)
    dma, hbm = ids[:2], ids[2]
    pipeline = world.pipelines["demo"]
    records = [decision(i) for i in dma] + [decision(hbm, "neuron-hbm-uncorrectable-error")]

    ledgers = _run_all(pipeline, records)

    assert [ledger["outcome"] for ledger in ledgers] == ["replaced"] * 3
    assert _fleet_mail(pipeline, [*dma, hbm]) == []
    windows = {
        fault: _window(pipeline, "trn1-mixed", fault)
        for fault in ("neuron-dma-error", "neuron-hbm-uncorrectable-error")
    }
    assert {fault: sorted(w["nodes"]) for fault, w in windows.items() if w} == {
        "neuron-dma-error": sorted(dma),
        "neuron-hbm-uncorrectable-error": [hbm],
    }
