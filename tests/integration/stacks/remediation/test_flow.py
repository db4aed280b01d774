"""The remediation flow end to end: the synthesized stacks in moto, executing; the Lambda
handlers in-process; the kube Lambda against the real local kube-apiserver; moto's reboots
and instance health reaching the simulated machines.

Each test makes its own node group (its own breaker) and looks only at what a user would:
Nodes through the Kubernetes API, the Auto Scaling group, the mail (SNS through SQS), the
ledger table and the metrics.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.kube import AWAITING_DEEP_CHECK_OUTCOME, HEALTH_LABEL, TAINT_KEY
from nodemedic.contracts.ledger import LOCK_SK
from nodemedic.contracts.logs import shipped_message
from nodemedic.detect.classifier import default_classifier
from nodemedic.origin.signing import sign
from nodemedic.remediate import ledger as nodemedic_ledger
from nodemedic.remediate.quarantine import share
from tests.support.flow import (
    GPU,
    NEURON,
    REBOOT_SECONDS,
    World,
    asg_instance,
    condition,
    neuron_line,
    our_taints,
)
from tests.support.kube import bind_pod, exists, owner, pdb, running, wait_for
from tests.support.remediation import (
    ACTING,
    EXAMPLES,
    Pipeline,
    datapoints,
    decision,
    instances,
    iso,
    metric_names,
)
from world.kube.watch import NodeSeen

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


def test_a_neuron_dma_error_line_replaces_the_node_after_a_drain_within_its_budget(
    world: World, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    sick, spare, other, _ = world.group("trn1-dma", 4, **NEURON)
    node = world.nodes[sick]
    app = {"app": "llama"}
    replicas = owner(admin, namespace, "ReplicaSet", "llama-7d9f")
    bind_pod(core, namespace, "llama-0", node, labels=app, owner=replicas)
    bind_pod(core, namespace, "llama-1", world.nodes[spare], labels=app, owner=replicas)
    monitor = owner(admin, namespace, "DaemonSet", "neuron-monitor")
    bind_pod(core, namespace, "neuron-monitor-0", node, owner=monitor)
    budget = pdb(admin, namespace, "llama", app, minAvailable=2)
    wait_for(lambda: (budget() or {}).get("currentHealthy") == 2, what="the budget's status")
    pipeline = world.pipelines["demo"]
    line = neuron_line(sick)

    world.ship("demo", sick, line)

    (execution,) = pipeline.executions(sick)
    name = execution.rsplit(":", 1)[1]
    # The first drain round is refused (HTTP 429: the budget allows no disruption). Then,
    # as the ReplicaSet controller would, a replacement replica starts on another node.
    wait_for(lambda: (pipeline.item(sick, f"decision#{name}") or {}).get("pods"), what="drain")
    marked = world.node(sick)
    bind_pod(core, namespace, "llama-2", world.nodes[other], labels=app, owner=replicas)
    result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED", result
    assert marked is not None
    fault = condition(marked, "NeuronHasError")
    assert (fault.status, fault.reason, fault.message) == ("True", "NeuronHasError_DMA_ERROR", line)
    assert marked.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"
    assert our_taints(marked) == [f"{TAINT_KEY}=neuron-dma-error:NoSchedule"]
    assert marked.spec.unschedulable is True
    rounds = [output["drained"] for output in pipeline.outputs(execution, "Drain")]
    assert rounds[0]["blocked"] == [f"{namespace}/llama-0"]
    assert [r["evicted"] for r in rounds if r["evicted"]] == [[f"{namespace}/llama-0"]]
    assert not any(r["deleted"] for r in rounds), "evicted, not deleted after the timeout"
    assert not exists(core, namespace, "llama-0")
    assert running(core, namespace, "llama-1") and running(core, namespace, "llama-2")
    assert exists(core, namespace, "neuron-monitor-0"), "DaemonSet pods stay"
    assert world.node(sick) is None, "the replaced instance's Node is deleted"
    instance = asg_instance(sick)
    assert (instance["HealthStatus"].upper(), instance["LifecycleState"]) == (
        "UNHEALTHY",
        "Terminating",
    )
    assert sick not in world.hypervisor.reboots

    group = {"Cluster": "demo", "NodeGroup": "trn1-dma"}
    assert "NeuronHasError_DMA_ERROR" in metric_names("NeuronHealthCheck", **group)
    assert {"RemediationSeconds", "FaultToActionSeconds", "InRemediation"} <= metric_names(
        "NodeMedic", **group
    )
    assert "Remediations" in metric_names(
        "NodeMedic", **group, Action="replace", Outcome="replaced"
    )
    gauge = datapoints("NodeMedic", "InRemediation", **group)
    assert (max(gauge), gauge[-1]) == (1, 0)
    (fault_to_cordon,) = datapoints("NodeMedic", "FaultToActionSeconds", **group)
    assert 0 <= fault_to_cordon < 30
    (mail,) = pipeline.messages(sick)
    assert mail["subject"] == f"nodemedic replaced: {sick}"
    assert (mail["outcome"], mail["node"], mail["evidence_line"]) == ("replaced", node, line)
    assert {"marked", "drained", "replaced", "deleted"} <= set(mail["actions"])
    ledger = pipeline.item(sick, f"decision#{name}")
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"], ledger["node_group"]) == (
        "closed",
        "replaced",
        "trn1-dma",
    )
    assert ledger["evidence_line"] == line
    assert '"owner_kind":"ReplicaSet","owner_name":"llama-7d9f"' in ledger["pods"]
    assert "neuron-monitor" not in ledger["pods"]
    assert pipeline.item(sick, "inflight") is None


def test_a_reboot_brings_the_node_back_and_the_same_fault_again_replaces_it(
    world: World,
) -> None:
    gpu, _, _ = world.group("p5-reboot", 3, **GPU)
    pipeline = world.pipelines["demo"]
    booted = world.node(gpu)
    assert booted is not None
    since = time.time()
    # Seen 20 minutes ago: the next sighting falls in another deduplication window.
    first = decision(gpu, "nvidia-xid-48", first_seen=datetime.now(UTC) - timedelta(minutes=20))

    assert pipeline.run(first)["status"] == "SUCCEEDED"

    back = world.node(gpu)
    assert back is not None
    assert back.status.node_info.boot_id != booted.status.node_info.boot_id
    assert condition(back, "Ready").status == "True"
    # Back, its fault cleared, but held cordoned for its post-repair deep check (test_gate).
    assert back.metadata.labels[HEALTH_LABEL] == "Unschedulable"
    assert back.spec.unschedulable
    assert our_taints(back) == []
    cleared = condition(back, "AcceleratedHardwareReady")
    assert (cleared.status, cleared.reason) == ("True", "NodeMedicCleared")
    assert world.hypervisor.reboots.count(gpu) == 1
    assert any(
        s.unschedulable and s.tainted and s.health == "UnschedulablePendingReboot"
        for s in world.seen(gpu, since)
    ), "cordoned, tainted and labelled while rebooting"
    ledger = pipeline.ledger(first)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", AWAITING_DEEP_CHECK_OUTCOME)
    (mail,) = pipeline.messages(gpu)
    assert mail["outcome"] == AWAITING_DEEP_CHECK_OUTCOME
    assert {"marked", "drained", "rebooted", "held_for_deep_check"} <= set(mail["actions"])

    again = decision(gpu, "nvidia-xid-48")
    assert again["decision_id"] != first["decision_id"]
    assert pipeline.run(again)["status"] == "SUCCEEDED"

    ledger = pipeline.ledger(again)
    assert ledger is not None
    assert ledger["outcome"] == "replaced"
    assert ledger["reason"].startswith("rebooted for this fault")
    assert world.hypervisor.reboots.count(gpu) == 1, "no second reboot"
    assert world.node(gpu) is None
    assert asg_instance(gpu)["HealthStatus"].upper() == "UNHEALTHY"
    # Fault to cordon: the first decision's line was 20 minutes old, the second's fresh.
    waited = datapoints("NodeMedic", "FaultToActionSeconds", Cluster="demo", NodeGroup="p5-reboot")
    assert (min(waited) < 30, max(waited) >= 20 * 60) == (True, True)


def test_a_fault_nvidia_heals_with_a_gpu_reset_reboots_where_gpu_reset_is_off(
    world: World,
) -> None:
    """The default: an Xid whose rule says ``reset`` reboots the node as it always did."""
    gpu, _ = world.group("p5-xid-46", 2, **GPU)
    pipeline = world.pipelines["demo"]
    line = "NVRM: Xid (PCI:0000:2b:00): 46, pid='<unknown>', name=<unknown>, GPU stopped processing"

    world.ship("demo", gpu, line)

    (execution,) = pipeline.executions(gpu)
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    ledger = pipeline.item(gpu, f"decision#{execution.rsplit(':', 1)[1]}")
    assert ledger is not None
    assert (ledger["fault_id"], ledger["action"]) == ("nvidia-xid-46", "reboot")
    assert ledger["outcome"] == AWAITING_DEEP_CHECK_OUTCOME
    assert world.hypervisor.reboots.count(gpu) == 1


def test_a_reboot_that_never_comes_back_escalates_to_replace(world: World) -> None:
    hung, _ = world.group("p5-hang", 2, **GPU)
    world.hypervisor.hang(hung)
    pipeline = world.pipelines["demo"]
    since = time.time()
    record = decision(hung, "nvidia-xid-48")

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    assert world.hypervisor.reboots.count(hung) == 1
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["outcome"], ledger["escalated"]) == ("replaced", True)
    assert ledger["escalation"] == (
        f"no new boot id within reboot_timeout ({ACTING.reboot_timeout} s)"
    )
    labels = [s.health for s in world.seen(hung, since) if s.event != "DELETED"]
    assert labels.index("UnschedulablePendingReboot") < labels.index(
        "UnschedulablePendingReplacement"
    )
    assert world.node(hung) is None
    assert asg_instance(hung)["LifecycleState"] == "Terminating"
    mails = pipeline.messages(hung)
    # One outcome, mailed once; a page while the breaker held it, or a word about the
    # node's jobs (a resume that met an error on a busy machine), is not this test's.
    outcomes = [m for m in mails if m.get("outcome") not in (None, "held")]
    assert len(outcomes) == 1, mails
    (mail,) = outcomes
    assert mail["outcome"] == "replaced"
    assert mail["escalation"]["escalated"] is True


@pytest.mark.parametrize(
    ("stack", "group", "outcome", "reason"),
    [
        ("watch", "trn1-watch", "monitored", "recovery_mode is None: label and condition only"),
        (
            "dry",
            "trn1-dry",
            "dry-run",
            "dry run: would cordon, drain and replace the node; label and condition only",
        ),
        ("demo", "trn1-unlisted", "unmanaged", "node group trn1-unlisted is not in node_groups"),
        # The default settings: no group listed, so no group is acted on (the IAM guardrails
        # would deny the reboot or replacement after the node was cordoned and drained).
        ("unset", "trn1-any", "unmanaged", "no node_groups configured: nodemedic acts on no group"),
    ],
)
def test_without_leave_to_act_the_node_is_only_marked(
    world: World, stack: str, group: str, outcome: str, reason: str
) -> None:
    sick, _ = world.group(group, 2, **NEURON)
    pipeline = world.pipelines[stack]
    record = decision(sick, cluster=stack)

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    node = world.node(sick)
    assert node is not None
    assert node.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"
    assert condition(node, "NeuronHasError").status == "True"
    assert not node.spec.unschedulable
    assert our_taints(node) == []
    instance = asg_instance(sick)
    assert (instance["HealthStatus"].upper(), instance["LifecycleState"]) == (
        "HEALTHY",
        "InService",
    )
    assert sick not in world.hypervisor.reboots
    (mail,) = pipeline.messages(sick)
    assert (mail["outcome"], mail["action"], mail["reason"]) == (outcome, "replace", reason)
    assert reason in mail["summary"]
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", outcome)
    dimensions = {"Cluster": stack, "NodeGroup": group}
    assert "Remediations" in metric_names(
        "NodeMedic", **dimensions, Action="replace", Outcome=outcome
    )
    assert datapoints("NodeMedic", "InRemediation", **dimensions) == [], "no breaker slot"
    assert "FaultToActionSeconds" not in metric_names("NodeMedic", **dimensions), "no cordon"


def _peak_cordoned(seen: list[NodeSeen]) -> int:
    cordoned: dict[str, bool] = {}
    peak = 0
    for s in seen:
        cordoned[s.instance_id] = s.unschedulable and s.event != "DELETED"
        peak = max(peak, sum(cordoned.values()))
    return peak


def test_the_quarantine_cordons_its_share_and_the_breaker_repairs_max_parallel_at_a_time(
    world: World,
) -> None:
    wide = world.group("trn1-wide", 10, **NEURON)
    pipeline = world.pipelines["demo"]
    since = time.time()
    # Ten different faults: the same one on ten nodes at once would be a fleet event.
    replacing = [r for r, line in EXAMPLES.items() if _replaces(r, line)][: len(wide)]
    records = [decision(i, fault) for i, fault in zip(wide, replacing, strict=True)]

    executions = [pipeline.start(record) for record in records]
    results = [pipeline.finish(execution, timeout=300) for execution in executions]

    assert [r["status"] for r in results] == ["SUCCEEDED"] * len(wide), [
        {k: v for k, v in (pipeline.ledger(record) or {}).items() if k in ("failed_step", "error")}
        for record, result in zip(records, results, strict=True)
        if result["status"] != "SUCCEEDED"
    ]
    seen = [s for s in world.watch.seen if s.instance_id in wide and s.at >= since]
    # Half the group stops taking work at once (the quarantine's group share), not only the
    # max_parallel that the breaker lets be drained and replaced.
    assert _peak_cordoned(seen) >= share(ACTING.quarantine_group_percent, len(wide))
    ledgers = [pipeline.ledger(record) for record in records]
    assert [ledger and ledger["outcome"] for ledger in ledgers] == ["replaced"] * len(wide)
    # The first max_parallel went straight in; every other one was held, mailed, waited.
    marks = sorted((_marked_at(ledger), i) for ledger, i in zip(ledgers, wide, strict=True))
    first_in = {instance for _, instance in marks[: ACTING.max_parallel]}
    held = {i for i in wide if any(m["outcome"] == "held" for m in pipeline.messages(i))}
    assert held == set(wide) - first_in
    # One waiting decision goes in per remediation that ends: never more than the slots.
    starts = [at for at, _ in marks]
    ends = sorted(str(ledger and ledger["ended_at"]) for ledger in ledgers)
    for k in range(ACTING.max_parallel, len(wide)):
        assert starts[k] > ends[k - ACTING.max_parallel], k
    group = {"Cluster": "demo", "NodeGroup": "trn1-wide"}
    assert "BreakerHeld" in metric_names("NodeMedic", **group)
    assert max(datapoints("NodeMedic", "InRemediation", **group)) == ACTING.max_parallel


def _replaces(fault_id: str, line: str | None) -> bool:
    """A kernel rule whose example line the classifier takes for it, and replaces on."""
    fault = default_classifier().classify(line) if line else None
    return fault is not None and fault.rule.id == fault_id and fault.rule.action == "replace"


def _marked_at(ledger: dict[str, Any] | None) -> str:
    assert ledger is not None
    return str(json.loads(ledger["actions"])["marked"]["at"])


def test_two_decisions_for_one_node_at_once_make_one_remediation(world: World) -> None:
    node, _, _ = world.group("trn1-twice", 3, **NEURON)
    pipeline = world.pipelines["demo"]
    records = [decision(node), decision(node, "neuron-hbm-uncorrectable-error")]

    results = [pipeline.finish(e) for e in [pipeline.start(r) for r in records]]

    assert [r["status"] for r in results] == ["SUCCEEDED", "SUCCEEDED"]
    ledgers = [pipeline.ledger(record) for record in records]
    assert sorted(str(ledger and ledger["state"]) for ledger in ledgers) == [
        "closed",
        "duplicate",
    ]
    (mail,) = pipeline.messages(node)
    assert mail["outcome"] == "replaced"
    assert world.node(node) is None


def blocked_drain(
    world: World, admin: client.ApiClient, namespace: str, *, node: str, spare: str
) -> Callable[[], object]:
    """A training pod on the instance's Node whose budget allows no eviction, so that a
    remediation of it stays in flight, draining; the function returned unblocks the drain
    as the pod's ReplicaSet would, starting a replica on ``spare``."""
    app = {"app": "trainer"}
    replicas = owner(admin, namespace, "ReplicaSet", "trainer-5c8d")
    bind_pod(world.core, namespace, "trainer-0", world.nodes[node], labels=app, owner=replicas)
    budget = pdb(admin, namespace, "trainer", app, minAvailable=1)
    wait_for(lambda: (budget() or {}).get("currentHealthy") == 1, what="the budget's status")
    return lambda: bind_pod(
        world.core, namespace, "trainer-1", world.nodes[spare], labels=app, owner=replicas
    )


def draining(pipeline: Pipeline, record: dict[str, Any]) -> str:
    """Start the remediation of ``record``; its execution, once its drain was refused."""
    execution = pipeline.start(record)
    wait_for(lambda: (pipeline.ledger(record) or {}).get("pods"), what="the first drain round")
    return execution


def test_a_stronger_fault_during_a_reboot_replaces_the_node_instead_of_rebooting_it(
    world: World, admin: client.ApiClient, namespace: str
) -> None:
    gpu, spare, _ = world.group("p5-upgrade", 3, **GPU)
    pipeline = world.pipelines["demo"]
    unblock = blocked_drain(world, admin, namespace, node=gpu, spare=spare)
    since = time.time()
    first = decision(gpu, "nvidia-xid-48")
    in_flight = draining(pipeline, first)
    stronger = decision(gpu, "nvidia-xid-79")

    assert pipeline.run(stronger)["status"] == "SUCCEEDED"
    unblock()
    result = pipeline.finish(in_flight)

    assert result["status"] == "SUCCEEDED", result
    assert gpu not in world.hypervisor.reboots, "a node to be replaced is not rebooted first"
    assert world.node(gpu) is None
    instance = asg_instance(gpu)
    assert (instance["HealthStatus"].upper(), instance["LifecycleState"]) == (
        "UNHEALTHY",
        "Terminating",
    )
    labels = [s.health for s in world.seen(gpu, since) if s.event != "DELETED"]
    assert labels.index("UnschedulablePendingReboot") < labels.index(
        "UnschedulablePendingReplacement"
    )
    reason = (
        "nvidia-xid-79 during the remediation calls for a replacement "
        f"(decision {stronger['decision_id']})"
    )
    ledger = pipeline.ledger(first)
    assert ledger is not None
    assert (ledger["outcome"], ledger["escalated"], ledger["escalation"]) == (
        "replaced",
        True,
        reason,
    )
    upgraded = pipeline.ledger(stronger)
    assert upgraded is not None
    assert (upgraded["state"], upgraded["outcome"], upgraded["upgraded_decision"]) == (
        "upgraded",
        "upgraded",
        first["decision_id"],
    )
    (mail,) = pipeline.messages(gpu)
    assert (mail["decision_id"], mail["outcome"]) == (first["decision_id"], "replaced")
    assert mail["escalation"] == {"escalated": True, "reason": reason}
    assert pipeline.item(gpu, "inflight") is None


def test_a_stronger_fault_during_the_reboot_replaces_the_node_once_it_is_back(
    world: World,
) -> None:
    gpu, _ = world.group("p5-rebooted", 2, **GPU)
    # The node comes back when the test says so, not before.
    world.hypervisor.hang(gpu)
    pipeline = world.pipelines["demo"]
    first = decision(gpu, "nvidia-xid-48")
    in_flight = pipeline.start(first)
    wait_for(lambda: gpu in world.hypervisor.reboots, what="the reboot")
    # What "Flag upgrade" of a decision to replace sends, while the node reboots.
    flag = {":now": iso(datetime.now(UTC)), ":me": "xid-79-decision", ":fault": "nvidia-xid-79"}
    pipeline.dynamodb.update_item(
        TableName=pipeline.table,
        Key={"pk": {"S": gpu}, "sk": {"S": LOCK_SK}},
        UpdateExpression=nodemedic_ledger.FLAG_UPGRADE.text,
        ConditionExpression=nodemedic_ledger.UPGRADABLE.text,
        ExpressionAttributeValues={
            **{name: {"S": value} for name, value in flag.items()},
            ":weaker": {"S": nodemedic_ledger.UPGRADED_FROM},
        },
    )
    world.kubelet.reboot(world.nodes[gpu], down_seconds=REBOOT_SECONDS)

    result = pipeline.finish(in_flight)

    assert result["status"] == "SUCCEEDED", result
    assert world.hypervisor.reboots.count(gpu) == 1
    assert pipeline.outputs(in_flight, "Settle"), "the node came back"
    ledger = pipeline.ledger(first)
    assert ledger is not None
    assert (ledger["outcome"], ledger["escalation"]) == (
        "replaced",
        "nvidia-xid-79 during the remediation calls for a replacement (decision xid-79-decision)",
    )
    assert world.node(gpu) is None
    assert asg_instance(gpu)["HealthStatus"].upper() == "UNHEALTHY"


def test_a_weaker_or_equal_fault_during_a_replacement_is_recorded_and_changes_nothing(
    world: World, admin: client.ApiClient, namespace: str
) -> None:
    gpu, spare = world.group("p5-weaker", 2, **GPU)
    pipeline = world.pipelines["demo"]
    unblock = blocked_drain(world, admin, namespace, node=gpu, spare=spare)
    first = decision(gpu, "nvidia-xid-79")
    in_flight = draining(pipeline, first)
    lock = pipeline.item(gpu, "inflight")
    assert lock is not None
    assert (lock["decision_id"], lock["planned_action"]) == (first["decision_id"], "replace")
    later = [decision(gpu, "nvidia-xid-48"), decision(gpu, "nvidia-xid-74")]

    assert [pipeline.run(record)["status"] for record in later] == ["SUCCEEDED"] * 2
    assert pipeline.item(gpu, "inflight") == lock, "the remediation in flight is unchanged"
    unblock()
    result = pipeline.finish(in_flight)

    assert result["status"] == "SUCCEEDED", result
    for record in later:
        recorded = pipeline.ledger(record)
        assert recorded is not None
        assert (recorded["state"], recorded["outcome"]) == ("duplicate", "duplicate")
    ledger = pipeline.ledger(first)
    assert ledger is not None
    assert (ledger["outcome"], "escalated" in ledger) == ("replaced", False)
    assert gpu not in world.hypervisor.reboots
    assert world.node(gpu) is None
    assert [m["decision_id"] for m in pipeline.messages(gpu)] == [first["decision_id"]]


def test_a_stronger_fault_while_the_node_is_given_back_waits_for_the_lock_and_replaces_it(
    world: World,
) -> None:
    gpu, _ = world.group("p5-late", 2, **GPU)
    pipeline = world.pipelines["demo"]
    now = iso(datetime.now(UTC))
    # The lock of a rebooted node's remediation that began to give the node back: too late
    # for it to read an upgrade.
    lock = {
        **nodemedic_ledger.key({"S": gpu}, {"S": LOCK_SK}),
        **nodemedic_ledger.lock_item(
            {"S": "given-back"},
            {"S": "nvidia-xid-48"},
            {"S": "reboot"},
            {"S": now},
            {"N": str(int(time.time()) + 3600)},
        ),
        nodemedic_ledger.REBOOTED_AT: {"S": now},
        nodemedic_ledger.GIVING_BACK_AT: {"S": now},
    }
    pipeline.dynamodb.put_item(TableName=pipeline.table, Item=lock)
    stronger = decision(gpu, "nvidia-xid-79")

    execution = pipeline.start(stronger)
    wait_for(lambda: pipeline.outputs(execution, "Wait for lock"), what="a wait for the lock")
    # The remediation giving the node back ends: it releases its lock.
    pipeline.dynamodb.delete_item(
        TableName=pipeline.table, Key={"pk": lock["pk"], "sk": lock["sk"]}
    )
    result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED", result
    ledger = pipeline.ledger(stronger)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", "replaced")
    assert world.node(gpu) is None
    assert asg_instance(gpu)["HealthStatus"].upper() == "UNHEALTHY"
    assert pipeline.item(gpu, "inflight") is None


def test_an_application_fault_is_mailed_and_measured_without_touching_the_node(
    world: World,
) -> None:
    gpu, _ = world.group("p5-notify", 2, **GPU)
    pipeline = world.pipelines["demo"]
    record = decision(gpu, "nvidia-xid-13")

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    node = world.node(gpu)
    assert node is not None
    assert HEALTH_LABEL not in node.metadata.labels
    assert not node.spec.unschedulable
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", "notified")
    (mail,) = pipeline.messages(gpu)
    assert (mail["subject"], mail["outcome"]) == (f"nodemedic notified: {gpu}", "notified")
    assert mail["summary"].startswith(f"notified: nvidia-xid-13 on {gpu} (group p5-notify) after ")
    assert mail["evidence_line"] == EXAMPLES["nvidia-xid-13"]
    assert "NvidiaXid_13" in metric_names("NodeMedic", Cluster="demo", NodeGroup="p5-notify")
    assert pipeline.item(gpu, "inflight") is None


def test_a_dma_error_line_user_space_wrote_is_only_mailed_and_the_node_keeps_running(
    world: World,
) -> None:
    """The line a pod with /dev/kmsg could write, as the agent ships it (facility LOG_USER),
    in a cluster that does not accept injected faults: the decision the classifier makes
    of it passes the state machine's checks and goes the notify way."""
    sick, _ = world.group("trn1-injected", 2, **NEURON)
    pipeline = world.pipelines["demo"]
    record = decision(sick, "neuron-dma-error", line=shipped_message(neuron_line(sick), 1))
    assert (record["action"], record["health_status"]) == ("notify", "Schedulable")

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    node = world.node(sick)
    assert node is not None
    assert HEALTH_LABEL not in node.metadata.labels
    assert not node.spec.unschedulable and our_taints(node) == []
    assert asg_instance(sick)["HealthStatus"] == "Healthy"
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["outcome"]) == ("closed", "notified")
    (mail,) = pipeline.messages(sick)
    assert (mail["subject"], mail["outcome"]) == (f"nodemedic notified: {sick}", "notified")
    assert mail["evidence_line"] == (
        "(not logged by the kernel: replace capped to notify, accept_injected_faults is off) "
        f"[injected facility=1] {neuron_line(sick)}"
    )
    assert pipeline.item(sick, "inflight") is None


def test_a_signed_dma_error_two_days_old_is_mailed_as_stale_and_the_node_keeps_running(
    world: World,
) -> None:
    """A late delivery (or a replay of the dead-letter queue) of a genuine line: signed by
    the node's own key, but logged two days before the classifier hears it."""
    sick, _ = world.group("trn1-stale", 2, **NEURON)
    pipeline = world.pipelines["demo"]
    logged_ms = int((time.time() - 2 * 86400) * 1000)
    line = neuron_line(sick)

    world.put("demo", sick, sign(world.key("demo", sick), sick, logged_ms, line), logged_ms)

    (execution,) = pipeline.executions(sick)
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    node = world.node(sick)
    assert node is not None and not node.spec.unschedulable and our_taints(node) == []
    assert asg_instance(sick)["HealthStatus"] == "Healthy"
    (mail,) = pipeline.messages(sick)
    assert mail["outcome"] == "notified"
    assert mail["evidence_line"].startswith("(stale: logged 1728")
    assert mail["evidence_line"].endswith(f"replace capped to notify) {line}")


def test_a_failed_step_is_recorded_mailed_and_fails_the_execution(world: World) -> None:
    # An instance of a managed group that never joined the cluster: no Node to act on.
    (ghost,) = instances("p5-ghost", 1, instance_type="p5.48xlarge")
    pipeline = world.pipelines["demo"]
    record = decision(ghost, "nvidia-xid-79")

    result = pipeline.run(record)

    assert (result["status"], result["error"]) == ("FAILED", "RemediationFailed")
    ledger = pipeline.ledger(record)
    assert ledger is not None
    assert (ledger["state"], ledger["failed_step"]) == ("failed", "planning")
    assert "NodeNotFound" in ledger["error"]
    (mail,) = pipeline.messages(ghost)
    assert (mail["subject"], mail["outcome"]) == (f"nodemedic failed: {ghost}", "failed")
    assert mail["summary"].endswith("stopped at planning: NodeNotFound")
    assert pipeline.item(ghost, "inflight") is None, "the lock is released"
    assert "Remediations" in metric_names(
        "NodeMedic", Cluster="demo", NodeGroup="p5-ghost", Action="replace", Outcome="failed"
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"cluster": "elsewhere"}, "WrongCluster"),
        ({"schema": 2}, "InvalidDecision"),
        ({"count": "1"}, "InvalidDecision"),
        ({"evidence_line": None}, "InvalidDecision"),
    ],
)
def test_a_decision_it_must_not_act_on_fails_without_a_trace(
    world: World, change: dict[str, Any], error: str
) -> None:
    instance = f"i-0{secrets.token_hex(8)}"
    pipeline = world.pipelines["demo"]
    record = {k: v for k, v in {**decision(instance), **change}.items() if v is not None}

    # Refused before its recorder is asked: whoever started it, it is no decision.
    result = pipeline.finish(pipeline.start(record, recorded=False))

    assert (result["status"], result["error"]) == ("FAILED", error)
    assert pipeline.ledger(record) is None
    assert pipeline.messages(instance) == []
