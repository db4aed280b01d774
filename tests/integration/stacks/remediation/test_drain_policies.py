"""Drain policies end to end: a GPU node rebooted by the synthesized state machine in moto,
with the kube Lambda on the real kube-apiserver and the job monitor's handler fed a
Container Insights delivery as its subscription would. A checkpointing job is asked for a
checkpoint and evicted once its checkpoint line is logged, before its grace ends, or at
the grace's end when no line comes; a pod allowed to complete is evicted once it finished,
while the node's other pods go at once; a grace that is no number of seconds drains at the
default grace and the node is repaired, never stranded at ``draining``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from lambdas.jobs.handler import handler as jobs_handler
from nodemedic.contracts.env import ENV_CLUSTER, ENV_LEDGER_TABLE
from nodemedic.contracts.jobs import LOG_MONITORING_ANNOTATION, application_log_group
from nodemedic.contracts.kube import (
    CHECKPOINT_EVENT_REASON,
    CHECKPOINT_REQUESTED_ANNOTATION,
    CHECKPOINT_SAVED_ANNOTATION,
    DRAIN_GRACE_EVENT_REASON,
    DRAIN_GRACE_KEY,
    DRAIN_POLICY_KEY,
)
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World
from tests.support.kube import bind_pod, exists, owner, running, wait_for
from tests.support.lambda_context import lambda_context
from tests.support.payloads import delivery
from tests.support.remediation import FAST, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

GRACE = 20
"""Seconds a policy's pod may be waited for: under half of the drain timeout, and long
enough that an eviction it did not wait out is told from one at its end on a busy machine."""
POLICIES = ClusterSettings(
    name="policies",
    node_groups=("p5-allow", "p5-ckpt-saved", "p5-ckpt-late", "p5-nan"),
    post_reboot_deep_check=False,
    **(FAST | {"drain_timeout": 50}),
)
CHECKPOINT_RULES = json.dumps([{"name": "checkpoint", "logPattern": r".*saved checkpoint .*"}])


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (POLICIES,)


@pytest.fixture
def job_monitor(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The job monitor's environment: the policies cluster's ledger."""
    monkeypatch.setenv(ENV_LEDGER_TABLE, world.pipelines[POLICIES.name].table)
    monkeypatch.setenv(ENV_CLUSTER, POLICIES.name)
    yield


def job_notes(admin: client.ApiClient, namespace: str, name: str) -> dict[str, str]:
    meta = client.BatchV1Api(admin).read_namespaced_job(name, namespace).metadata
    return dict(meta.annotations or {})


def checkpointing_job(
    world: World, admin: client.ApiClient, namespace: str, name: str, instance: str
) -> str:
    """A training Job asking for a checkpoint before its pods are evicted; its pod on the
    instance's node, running."""
    notes = {
        DRAIN_POLICY_KEY: "checkpoint",
        DRAIN_GRACE_KEY: str(GRACE),
        LOG_MONITORING_ANNOTATION: CHECKPOINT_RULES,
    }
    pod = f"{name}-0"
    bind_pod(
        world.core,
        namespace,
        pod,
        world.nodes[instance],
        owner=owner(admin, namespace, "Job", name, notes),
    )
    wait_for(lambda: running(world.core, namespace, pod), what=f"{pod} running")
    return pod


def asked(admin: client.ApiClient, namespace: str, name: str) -> float:
    """Waits for the drain's checkpoint request on the job; the monotonic time it was seen."""
    wait_for(
        lambda: CHECKPOINT_REQUESTED_ANNOTATION in job_notes(admin, namespace, name),
        what="the checkpoint request",
    )
    return time.monotonic()


@pytest.mark.usefixtures("job_monitor")
def test_a_job_that_logs_its_checkpoint_is_evicted_before_its_grace_ends(
    world: World, admin: client.ApiClient, namespace: str
) -> None:
    gpu, _ = world.group("p5-ckpt-saved", 2, **GPU)
    pod = checkpointing_job(world, admin, namespace, "llama-ckpt", gpu)
    pipeline = world.pipelines[POLICIES.name]

    execution = pipeline.start(decision(gpu, "nvidia-xid-48", cluster=POLICIES.name))
    seen = asked(admin, namespace, "llama-ckpt")
    wait_for(
        lambda: any(
            e.reason == CHECKPOINT_EVENT_REASON
            for e in world.core.list_namespaced_event(namespace).items
        ),
        what="the checkpoint Event on the job",
    )
    time.sleep(1)
    assert exists(world.core, namespace, pod), "waiting for the checkpoint"

    line = "[rank 0] step 1200 saved checkpoint to s3://ckpt/llama/1200"
    context = lambda_context("jobs", memory_mb=256, timeout_seconds=60)
    jobs_handler(
        delivery(namespace, "llama-ckpt", pod, [line], application_log_group(POLICIES.name)),
        context,
    )

    wait_for(lambda: not exists(world.core, namespace, pod), what=f"{pod} evicted")
    assert time.monotonic() - seen < GRACE - 1, "evicted on the checkpoint, not the grace"
    assert CHECKPOINT_SAVED_ANNOTATION in job_notes(admin, namespace, "llama-ckpt")
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"


def test_a_job_that_never_checkpoints_is_evicted_when_its_grace_ends(
    world: World, admin: client.ApiClient, namespace: str
) -> None:
    gpu, _ = world.group("p5-ckpt-late", 2, **GPU)
    pod = checkpointing_job(world, admin, namespace, "llama-late", gpu)
    pipeline = world.pipelines[POLICIES.name]

    execution = pipeline.start(decision(gpu, "nvidia-xid-48", cluster=POLICIES.name))
    seen = asked(admin, namespace, "llama-late")
    # The grace runs from the drain's start, a busy machine's seconds before ``seen``.
    time.sleep(GRACE / 2)
    assert exists(world.core, namespace, pod), "waited for within its grace"

    wait_for(lambda: not exists(world.core, namespace, pod), what=f"{pod} evicted")
    assert time.monotonic() - seen < (GRACE + POLICIES.drain_timeout) / 2, "not the timeout's"
    assert CHECKPOINT_SAVED_ANNOTATION not in job_notes(admin, namespace, "llama-late")
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"


def test_a_pod_allowed_to_complete_is_evicted_once_it_finished(
    world: World, namespace: str
) -> None:
    gpu, _ = world.group("p5-allow", 2, **GPU)
    policy = {DRAIN_POLICY_KEY: "allow-completion", DRAIN_GRACE_KEY: str(GRACE)}
    on = world.nodes[gpu]
    bind_pod(world.core, namespace, "eval", on, annotations=policy)
    bind_pod(world.core, namespace, "web", on)
    wait_for(
        lambda: running(world.core, namespace, "eval") and running(world.core, namespace, "web")
    )
    pipeline = world.pipelines[POLICIES.name]

    execution = pipeline.start(decision(gpu, "nvidia-xid-48", cluster=POLICIES.name))
    wait_for(lambda: not exists(world.core, namespace, "web"), what="web evicted at once")
    # The drain's first round is behind: its grace runs from at most now, however long a
    # busy machine took to plan, lock and cordon first.
    began = time.monotonic()
    assert running(world.core, namespace, "eval"), "still at work: waited for"

    world.core.patch_namespaced_pod_status("eval", namespace, {"status": {"phase": "Succeeded"}})

    wait_for(lambda: not exists(world.core, namespace, "eval"), what="eval evicted")
    assert time.monotonic() - began < GRACE - 5, "evicted once finished, not at the grace's end"
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"


def test_a_grace_that_is_no_number_drains_at_the_default_and_the_node_is_repaired(
    world: World, namespace: str
) -> None:
    """Any tenant may annotate its pod ``nan``: that once failed every drain round with a
    ValueError, and the execution with it, leaving the node cordoned, tainted and parked."""
    gpu, _ = world.group("p5-nan", 2, **GPU)
    policy = {DRAIN_POLICY_KEY: "allow-completion", DRAIN_GRACE_KEY: "nan"}
    bind_pod(world.core, namespace, "eval", world.nodes[gpu], annotations=policy)
    wait_for(lambda: running(world.core, namespace, "eval"))
    pipeline = world.pipelines[POLICIES.name]

    began = time.monotonic()
    execution = pipeline.start(decision(gpu, "nvidia-xid-48", cluster=POLICIES.name))
    wait_for(
        lambda: not exists(world.core, namespace, "eval"),
        timeout=POLICIES.drain_timeout + 15,
        what="eval evicted at the default grace",
    )

    assert time.monotonic() - began >= POLICIES.drain_timeout / 2 - 1, "waited the default"
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    node = world.node(gpu)
    assert node is not None and not node.spec.unschedulable, "given back, not stranded"
    reasons = [e.reason for e in world.core.list_namespaced_event(namespace).items]
    assert reasons.count(DRAIN_GRACE_EVENT_REASON) == 1
