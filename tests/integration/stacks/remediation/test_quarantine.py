"""Quarantine before the breaker, end to end on the synthesized state machine in moto and the
real apiserver (``nodemedic.remediate.quarantine``): every proven replace-level fault's node
is cordoned at once while the breaker paces the repairs; a fleet event is not; a dry run
touches nothing; the quarantine limit trips with one page and strands no node.

The tests run on a cluster of their own, ``quarantined``: the default group limit (50 % of
a group per 300 s), the whole cluster's Nodes as its cluster limit, ``max_parallel`` 2, rate
limits high enough that only the group's slots pace the replacements, waits of seconds."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client

from nodemedic.settings import ClusterSettings
from stacks.pipeline import stack_name
from stacks.synth import synth_template
from tests.support.flow import GPU, NEURON, World, our_taints
from tests.support.kube import wait_for
from tests.support.remediation import FAST, Pipeline, datapoints, decision
from world.aws.stack import deploy

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

QUARANTINED = ClusterSettings(
    name="quarantined",
    node_groups=("p5-storm", "trn1-fleet-storm", "p5-limit"),
    max_parallel=2,
    # The cluster's share is the unit tests'; here the group's alone limits (FAST: 100 % of
    # the cluster), whatever Nodes the apiserver holds when a test runs.
    replacements_per_hour=20,
    replacements_per_day=20,
    **{**FAST, "breaker_hold": 180, "quarantine_window": 300},
)
REPLACING = (
    "nvidia-xid-54",
    "nvidia-xid-79",
    "nvidia-xid-142",
    "nvidia-gpu-fallen-off-bus",
    "efa-device-reset-failed",
    "efa-device-not-ready",
    "edac-uncorrectable",
    "edac-mce-uncorrected",
    "memory-failure",
    "mce-uncorrected",
)
"""Ten distinct replace-level faults: hardware failing independently, no fleet event."""


@pytest.fixture(scope="module")
def quarantined(world: World) -> Pipeline:
    return Pipeline(deploy(synth_template(QUARANTINED), stack_name=stack_name(QUARANTINED)))


def _cordoned(world: World, instances: list[str]) -> list[str]:
    found = []
    for instance in instances:
        node = world.node(instance)
        if node is not None and node.spec.unschedulable:
            found.append(instance)
    return found


def _ever_cordoned(world: World, instances: list[str], since: float) -> set[str]:
    return {i for i in instances if any(seen.unschedulable for seen in world.seen(i, since))}


def _finish(pipeline: Pipeline, executions: list[str]) -> list[dict[str, Any]]:
    results = [pipeline.finish(execution, timeout=240) for execution in executions]
    assert [r["status"] for r in results] == ["SUCCEEDED"] * len(executions), results
    return results


def _holders(pipeline: Pipeline, group: str) -> list[str]:
    return list((pipeline.item(f"group#{group}", "breaker") or {}).get("holders", []))


def test_the_quarantine_limit_trips_once_and_strands_nothing(
    world: World, quarantined: Pipeline
) -> None:
    ids = world.group("p5-limit", 4, **GPU)
    records = [
        decision(i, fault, cluster=QUARANTINED.name)
        for i, fault in zip(ids, REPLACING, strict=False)
    ]
    executions = [quarantined.start(r) for r in records]

    limit = QUARANTINED.quarantine_group_percent * len(ids) // 100
    wait_for(
        lambda: any(n.outcome == "quarantine-tripped" for n in quarantined.inbox.messages()),
        timeout=60,
        what="the quarantine page",
    )
    _finish(quarantined, executions)

    pages = [n for n in quarantined.inbox.messages() if n.outcome == "quarantine-tripped"]
    assert len(pages) == 1, pages
    assert "quarantine limit reached" in pages[0].body["reason"]
    assert datapoints("NodeMedic", "QuarantineTripped", Cluster=QUARANTINED.name)
    windows = [
        item for item in _quarantine_windows(quarantined, "group#p5-limit") if item.get("nodes")
    ]
    assert [len(w["nodes"]) for w in windows] == [limit]
    reconciled = quarantined.run_as_rule(
        quarantined.reconcile,
        {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}},
    )
    stranded = json.loads(reconciled["output"])
    assert not {world.nodes[i] for i in ids} & set(stranded["nodes"])
    assert _cordoned(world, ids) == []


def test_a_fleet_event_cordons_no_node_in_the_end(world: World, quarantined: Pipeline) -> None:
    ids = world.group("trn1-fleet-storm", 8, **NEURON)
    sick = ids[:5]
    since = time.time()
    records = [decision(i, cluster=QUARANTINED.name) for i in sick]

    _finish(quarantined, [quarantined.start(r) for r in records])

    assert [(quarantined.ledger(r) or {})["outcome"] for r in records] == ["fleet"] * len(sick)
    assert _cordoned(world, ids) == []
    assert all(
        our_taints(world.node(i) or client.V1Node(spec=client.V1NodeSpec())) == [] for i in sick
    )
    # Only the sightings before the pattern showed were ever quarantined, for seconds.
    assert len(_ever_cordoned(world, sick, since)) <= QUARANTINED.fleet_min_nodes - 1


def test_ten_distinct_faults_at_once_are_all_cordoned_while_two_are_repaired(
    world: World, quarantined: Pipeline
) -> None:
    ids = world.group("p5-storm", 20, **GPU)
    sick = ids[: len(REPLACING)]
    records = [
        decision(i, fault, cluster=QUARANTINED.name)
        for i, fault in zip(sick, REPLACING, strict=True)
    ]

    executions = [quarantined.start(r) for r in records]

    # Every faulty node stops taking work at once, not when the breaker admits its repair.
    cordoned = wait_for(
        lambda: len(_cordoned(world, sick)) == len(sick), timeout=60, what="10 cordoned"
    )
    assert cordoned
    assert len(_holders(quarantined, "p5-storm")) <= QUARANTINED.max_parallel
    for instance, fault in zip(sick, REPLACING, strict=True):
        node = world.node(instance)
        assert node is not None
        assert our_taints(node) == [f"nodemedic.io/unhealthy={fault}:NoSchedule"]
    wait_for(
        lambda: any(m["outcome"] == "held" for i in sick for m in quarantined.messages(i)),
        timeout=60,
        what="the breaker's hold of the rest",
    )
    assert _cordoned(world, ids[len(sick) :]) == []

    _finish(quarantined, executions)
    assert [(quarantined.ledger(r) or {})["outcome"] for r in records] == ["replaced"] * 10
    assert datapoints("NodeMedic", "Quarantined", Cluster=QUARANTINED.name, NodeGroup="p5-storm")


def test_a_dry_run_touches_no_node(world: World) -> None:
    instance, _ = world.group("trn1-dry", 2, **NEURON)
    dry = world.pipelines["dry"]
    record = decision(instance, cluster="dry")

    assert dry.run(record)["status"] == "SUCCEEDED"

    node = world.node(instance)
    assert node is not None and not node.spec.unschedulable and our_taints(node) == []
    assert (dry.ledger(record) or {})["outcome"] != "replaced"


def _quarantine_windows(pipeline: Pipeline, pk: str) -> list[dict[str, Any]]:
    found = pipeline.dynamodb.query(
        TableName=pipeline.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :q)",
        ExpressionAttributeValues={":pk": {"S": pk}, ":q": {"S": "quarantine#"}},
        ConsistentRead=True,
    )["Items"]
    return [{k: next(iter(v.values())) for k, v in item.items()} for item in found]
