"""The deep check as a gate, on moto and the real apiserver: a rebooted node stays cordoned
behind the health-check taint until its post-repair deep check passes (a failed one
replaces it), a rebooted node with no verdict within ``deep_check_timeout`` is given back
and told once, and ``post_reboot_deep_check: false`` gives a rebooted node back at once."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client
from moto.sns.models import Topic

from lambdas.kube import gate
from nodemedic.contracts.kube import (
    AWAITING_DEEP_CHECK_OUTCOME,
    DEEP_CHECK_HELD_ANNOTATION,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    DEEP_CHECK_UNCHECKED,
    HEALTH_LABEL,
    SCHEDULABLE,
    UNSCHEDULABLE,
)
from nodemedic.contracts.ledger import LOCK_SK
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World, asg_instance, our_taints, ship_verdict
from tests.support.kube import wait_for
from tests.support.remediation import ACTING, UNGATED, Pipeline, decision
from world.aws.motopatch import INVOKE_LAMBDA, REBOOT_INSTANCES

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (UNGATED,)


def _checking(node: client.V1Node) -> bool:
    return any(t.key == DEEP_CHECK_TAINT_KEY for t in node.spec.taints or [])


def _rebooted(world: World, cluster: str, instance_id: str) -> tuple[client.V1Node, str]:
    """An Xid 48 rebooted by the cluster's pipeline; the Node as the remediation left it,
    the remediation closed with the outcome returned, its lock released (nothing
    stranded)."""
    pipeline = world.pipelines[cluster]
    booted = world.node(instance_id)
    assert booted is not None
    record = decision(instance_id, "nvidia-xid-48", cluster=cluster)
    assert pipeline.run(record)["status"] == "SUCCEEDED"
    back = world.node(instance_id)
    assert back is not None
    assert back.status.node_info.boot_id != booted.status.node_info.boot_id
    closed = pipeline.ledger(record)
    assert closed is not None and closed["state"] == "closed"
    assert pipeline.item(instance_id, LOCK_SK) is None
    return back, str(closed["outcome"])


def test_a_rebooted_node_stays_cordoned_until_its_post_repair_deep_check_passes(
    world: World,
) -> None:
    gpu, _, _ = world.group("p5-gate-passed", 3, **GPU)
    pipeline = world.pipelines["demo"]

    held, outcome = _rebooted(world, "demo", gpu)

    assert held.spec.unschedulable
    assert _checking(held) and our_taints(held) == []
    assert held.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    assert held.metadata.labels[HEALTH_LABEL] == UNSCHEDULABLE
    assert outcome == AWAITING_DEEP_CHECK_OUTCOME
    (mail,) = pipeline.messages(gpu)
    assert mail["outcome"] == AWAITING_DEEP_CHECK_OUTCOME
    assert "held_for_deep_check" in mail["actions"]

    shipped = time.monotonic()
    ship_verdict(world, gpu, "ok", "Passed", signed=True)

    wait_for(
        lambda: (n := world.node(gpu)) is not None and not n.spec.unschedulable,
        what="the node uncordoned after its deep check passed",
    )
    waited = time.monotonic() - shipped
    given = world.node(gpu)
    assert given is not None
    assert not _checking(given)
    assert given.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert given.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    print(f"post-reboot gate: verdict shipped -> schedulable in {waited:.2f} s")


def _boot(world: World, instance_id: str) -> str:
    node = world.node(instance_id)
    assert node is not None
    booted: str = node.status.node_info.boot_id
    return booted


def test_a_pass_signed_with_the_key_of_the_boot_before_the_reboot_does_not_admit_the_node(
    world: World,
) -> None:
    """Until the new boot registers its key, the old boot's still proves lines: whoever
    kept it (root on the node before the reboot) can sign a pass stamped after the reboot.
    It admits nothing; the new boot's own pass does."""
    gpu, _, _ = world.group("p5-gate-old-key", 3, **GPU)
    pipeline = world.pipelines["demo"]
    kept = world.key("demo", gpu)
    _, outcome = _rebooted(world, "demo", gpu)
    assert outcome == AWAITING_DEEP_CHECK_OUTCOME

    ship_verdict(world, gpu, "ok", "Passed", signed=True, key=kept)

    old = wait_for(lambda: pipeline.executions(gpu)[1:])[0]
    assert pipeline.finish(old)["status"] == "SUCCEEDED"
    (answer,) = pipeline.outputs(old, "Admit checked node")
    assert answer["deep_check"]["changed"] is False
    assert answer["deep_check"]["refused"].startswith("the pass is signed with the key of boot")
    held = world.node(gpu)
    assert held is not None and held.spec.unschedulable and _checking(held)
    assert held.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"

    # The new boot's pass, in a second of its own (a decision keeps whole seconds): its
    # key's registration line reached the classifier first, so it proves at once.
    time.sleep(1.05 - time.time() % 1)
    ship_verdict(world, gpu, "ok", "Passed", signed=True)

    current = wait_for(lambda: pipeline.executions(gpu)[2:])[0]
    assert pipeline.finish(current)["status"] == "SUCCEEDED"
    given = world.node(gpu)
    assert given is not None and not given.spec.unschedulable and not _checking(given)
    assert given.metadata.labels[DEEP_CHECK_LABEL] == "Passed"


def _passed_meanwhile(world: World, pipeline: Pipeline, instance_id: str) -> None:
    """The node's pass shipped and its execution (the second for the instance, after the
    reboot's) run to its end, while the reboot's execution waits where the caller stopped it."""
    ship_verdict(world, instance_id, "ok", "Passed", signed=True)
    executions = wait_for(
        lambda: pipeline.executions(instance_id)[1:] and pipeline.executions(instance_id)
    )
    pipeline.finish(executions[1])


def test_a_pass_in_before_the_watch_sees_the_node_back_is_not_waited_for(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent checks right after the boot; on AWS its pass often lands while the reboot's
    watch still polls. Under remediation, that pass admits nothing; the hold that follows
    must then not wait for it until ``deep_check_timeout``."""
    gpu, _, _ = world.group("p5-gate-early", 3, **GPU)
    pipeline = world.pipelines["demo"]
    reboot = REBOOT_INSTANCES.current()
    booted = _boot(world, gpu)

    def reboot_then_pass(self: Any, instance_ids: list[str]) -> Any:
        answer = reboot(self, instance_ids)
        # The reboot's execution waits in its reboot call, before its watch, for the pass
        # of the new boot, signed with its key: once the kubelet reports that boot, and in
        # a later second (a decision keeps whole seconds).
        wait_for(lambda: _boot(world, gpu) != booted, what="the new boot")
        time.sleep(1.05 - time.time() % 1)
        _passed_meanwhile(world, pipeline, gpu)
        return answer

    monkeypatch.setattr(REBOOT_INSTANCES.cls(), REBOOT_INSTANCES.name, reboot_then_pass)

    back, outcome = _rebooted(world, "demo", gpu)

    assert outcome == "rebooted"
    assert not back.spec.unschedulable
    assert not _checking(back) and our_taints(back) == []
    assert back.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert back.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    (mail,) = pipeline.messages(gpu)
    assert mail["outcome"] == "rebooted"
    assert "deep_check_passed" in mail["actions"]


def test_a_pass_in_while_the_reboot_still_holds_the_lock_lifts_the_cordon(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the hold and the release of the reboot's lock, a pass finds the node under
    remediation; that remediation is giving the node back, so the pass may lift its cordon."""
    gpu, _, _ = world.group("p5-gate-late", 3, **GPU)
    pipeline = world.pipelines["demo"]
    publish = Topic.publish

    def mail_then_pass(topic: Topic, message: str, *args: Any, **kwargs: Any) -> str:
        message_id = publish(topic, message, *args, **kwargs)
        # The reboot's execution waits in its mail, after the hold, before the lock's release.
        if gpu in message and AWAITING_DEEP_CHECK_OUTCOME in message:
            _passed_meanwhile(world, pipeline, gpu)
        return message_id

    monkeypatch.setattr(Topic, "publish", mail_then_pass)

    back, outcome = _rebooted(world, "demo", gpu)

    assert outcome == AWAITING_DEEP_CHECK_OUTCOME
    assert not back.spec.unschedulable
    assert not _checking(back) and our_taints(back) == []
    assert back.metadata.labels[DEEP_CHECK_LABEL] == "Passed"


def test_a_pass_that_read_the_lock_before_the_give_back_and_came_after_the_hold_lifts_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy cluster the pass's execution can read the node's lock while the reboot's
    watch still settles (no give-back noted: the cordon must stay) and admit the node only
    after the reboot held it. That pass is the check the hold waits for, and no other comes:
    it must not leave the node cordoned for good."""
    gpu, _, _ = world.group("p5-gate-between", 3, **GPU)
    pipeline = world.pipelines["demo"]
    reboot, invoke = REBOOT_INSTANCES.current(), INVOKE_LAMBDA.current()
    booted = _boot(world, gpu)
    delayed: list[str] = []

    def held() -> bool:
        node = world.node(gpu)
        return node is not None and DEEP_CHECK_HELD_ANNOTATION in (node.metadata.annotations or {})

    def lock_read() -> bool:
        executions = pipeline.executions(gpu)
        return len(executions) > 1 and bool(pipeline.outputs(executions[1], "Keep cordon"))

    def reboot_then_pass(self: Any, instance_ids: list[str]) -> Any:
        answer = reboot(self, instance_ids)
        wait_for(lambda: _boot(world, gpu) != booted, what="the new boot")
        time.sleep(1.05 - time.time() % 1)
        ship_verdict(world, gpu, "ok", "Passed", signed=True)
        wait_for(lock_read, what="the pass's read of the reboot's lock")
        return answer

    def admission_after_the_hold(self: Any, event: Any = None) -> Any:
        payload = json.loads(event) if isinstance(event, (str, bytes)) else event
        if isinstance(payload, dict) and payload.get("op") == "deep_check" and not delayed:
            delayed.append(str(payload.get("instance_id")))
            wait_for(held, what="the reboot's hold")
        return invoke(self, event)

    monkeypatch.setattr(REBOOT_INSTANCES.cls(), REBOOT_INSTANCES.name, reboot_then_pass)
    monkeypatch.setattr(INVOKE_LAMBDA.cls(), INVOKE_LAMBDA.name, admission_after_the_hold)

    _, outcome = _rebooted(world, "demo", gpu)

    assert outcome == AWAITING_DEEP_CHECK_OUTCOME
    assert delayed == [gpu]
    assert pipeline.finish(pipeline.executions(gpu)[1])["status"] == "SUCCEEDED"
    back = world.node(gpu)
    assert back is not None
    assert not back.spec.unschedulable
    assert not _checking(back) and our_taints(back) == []
    assert back.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert back.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    assert DEEP_CHECK_HELD_ANNOTATION not in (back.metadata.annotations or {})


def test_a_rebooted_node_whose_post_repair_deep_check_fails_is_replaced(world: World) -> None:
    gpu, _, _ = world.group("p5-gate-failed", 3, **GPU)
    pipeline = world.pipelines["demo"]
    _rebooted(world, "demo", gpu)

    ship_verdict(world, gpu, "fail", "Failed", signed=True)

    # The reboot's execution, then the verdict's.
    _, verdict = wait_for(lambda: pipeline.executions(gpu)[1:] and pipeline.executions(gpu))
    assert pipeline.finish(verdict)["status"] == "SUCCEEDED"
    assert world.node(gpu) is None
    assert asg_instance(gpu)["HealthStatus"] == "Unhealthy"
    assert [m["outcome"] for m in pipeline.messages(gpu)] == [
        AWAITING_DEEP_CHECK_OUTCOME,
        "replaced",
    ]


def _overdue(pipeline: Pipeline) -> dict[str, object]:
    return dict(pipeline.scheduled(pipeline.reconcile, "List overdue deep checks")["overdue"])


def _told(pipeline: Pipeline, node: str) -> list[str]:
    return pipeline.told("nodemedic demo: deep checks overdue", node)


def test_a_rebooted_node_without_a_verdict_within_the_timeout_is_given_back_and_told_once(
    world: World,
) -> None:
    """Its agent checked nothing, or never ran the check: the reboot cleared the fault, so
    the node comes back after ``deep_check_timeout`` instead of waiting out of service for
    a verdict that may never come."""
    gpu, _, _ = world.group("p5-gate-overdue", 3, **GPU)
    pipeline = world.pipelines["demo"]
    _rebooted(world, "demo", gpu)
    name = world.nodes[gpu]

    wait_for(
        lambda: name in _overdue(pipeline)["given_back"],  # type: ignore[operator]
        what=f"the node given back after deep_check_timeout ({ACTING.deep_check_timeout} s)",
        timeout=30,
    )
    assert name not in _overdue(pipeline)["nodes"]  # type: ignore[operator]

    (told,) = _told(pipeline, name)
    assert f"{name} ({gpu}): waiting since" in told
    assert f"given back, {DEEP_CHECK_UNCHECKED}" in told
    assert "no deep check verdict within deep_check_timeout (3 s)" in told
    node = world.node(gpu)
    assert node is not None and not _checking(node) and not node.spec.unschedulable
    assert our_taints(node) == []
    assert node.metadata.labels[DEEP_CHECK_LABEL] == DEEP_CHECK_UNCHECKED
    assert node.metadata.labels[HEALTH_LABEL] == SCHEDULABLE


def test_without_the_post_reboot_deep_check_a_rebooted_node_is_given_back_at_once(
    world: World,
) -> None:
    gpu, _, _ = world.group("p5-ungated", 3, **GPU)
    pipeline = world.pipelines["ungated"]

    back, outcome = _rebooted(world, "ungated", gpu)

    assert not back.spec.unschedulable
    assert not _checking(back) and our_taints(back) == []
    assert back.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    assert DEEP_CHECK_LABEL not in back.metadata.labels
    assert outcome == "rebooted"
    assert [m["outcome"] for m in pipeline.messages(gpu)] == ["rebooted"]


def test_a_pass_admits_its_node_through_an_api_server_outage(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass comes once: its admission rides out more than one failed call (backing off)
    rather than leave a healthy node behind its taint."""
    gpu, _, _ = world.group("p5-gate-outage", 3, **GPU)
    pipeline = world.pipelines["demo"]
    _rebooted(world, "demo", gpu)
    verdict = gate.deep_check_verdict
    failures = iter(range(3))

    def unreachable_then_up(*args: Any, **kwargs: Any) -> dict[str, Any]:
        if next(failures, None) is not None:
            raise ConnectionRefusedError("the API server is down")
        return verdict(*args, **kwargs)

    monkeypatch.setattr(gate, "deep_check_verdict", unreachable_then_up)

    ship_verdict(world, gpu, "ok", "Passed", signed=True)

    _, admission = wait_for(lambda: pipeline.executions(gpu)[1:] and pipeline.executions(gpu))
    assert pipeline.finish(admission)["status"] == "SUCCEEDED"
    given = world.node(gpu)
    assert given is not None and not given.spec.unschedulable and not _checking(given)
