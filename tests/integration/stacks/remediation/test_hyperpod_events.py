"""SageMaker HyperPod's own findings take the road nodemedic's decisions take: the real
state machine, its breaker, ledger and mail, on the real local kube-apiserver. Only their
evidence differs, and by default how far it may act."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodemedic.contracts.kube import HEALTH_LABEL
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.decision import Identity, decide
from nodemedic.remediate.hyperpod import HYPERPOD_UNPROVEN
from tests.support.flow import GPU, World, asg_instance
from tests.support.paths import EVENTS

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]
TERMINATE = (EVENTS / "hyperpod" / "agent-nvidia-error-terminate.json").read_text().strip()


def hyperpod_decision(instance_id: str, *, act: bool) -> dict[str, object]:
    """The classifier's decision of HyperPod's NvidiaErrorTerminate detection: its replace
    where HyperPod's events may act, capped to notify where they may not (the default)."""
    fault = default_classifier().classify(TERMINATE, HYPERPOD_SOURCE)
    assert fault is not None
    made = decide(
        fault,
        Identity(cluster="demo", instance_id=instance_id, source=HYPERPOD_SOURCE),
        first_seen=datetime.now(UTC),
        unproven=None if act else HYPERPOD_UNPROVEN.reason,
    )
    assert made is not None
    return made.to_record()


def test_a_hyperpod_replace_is_drained_recorded_and_mailed_like_any_other(world: World) -> None:
    gpu, _, _ = world.group("p5-hyperpod", 3, **GPU)
    pipeline = world.pipelines["demo"]
    record = hyperpod_decision(gpu, act=True)
    assert (record["source"], record["action"]) == ("hyperpod", "replace")

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    assert world.node(gpu) is None
    assert asg_instance(gpu)["HealthStatus"].upper() == "UNHEALTHY"
    ledger = pipeline.ledger(record)
    assert ledger is not None and ledger["outcome"] == "replaced"
    assert (ledger["source"], ledger["node_group"]) == ("hyperpod", "p5-hyperpod")
    (mail,) = pipeline.messages(gpu)
    assert mail["outcome"] == "replaced"
    assert mail["fault_id"] == "hyperpod-nvidia-error-terminate"


def test_by_default_hyperpods_replace_is_only_mailed_and_the_node_keeps_running(
    world: World,
) -> None:
    gpu, _, _ = world.group("p5-hyperpod-notify", 3, **GPU)
    pipeline = world.pipelines["demo"]
    record = hyperpod_decision(gpu, act=False)

    assert pipeline.run(record)["status"] == "SUCCEEDED"

    node = world.node(gpu)
    assert node is not None and not node.spec.unschedulable
    assert HEALTH_LABEL not in node.metadata.labels
    assert asg_instance(gpu)["HealthStatus"] == "Healthy"
    ledger = pipeline.ledger(record)
    assert ledger is not None and (ledger["outcome"], ledger["action"]) == ("notified", "notify")
    (mail,) = pipeline.messages(gpu)
    assert mail["outcome"] == "notified"
    assert mail["evidence_line"].startswith("(origin not proven: SageMaker HyperPod's event")
