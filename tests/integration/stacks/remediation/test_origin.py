"""Proof of origin end to end: lines written into a node's kernel log stream reach the
classifier through the synthesized stack's subscription in moto, and the remediation acts
on the real local kube-apiserver only for a line the node's own agent signed."""

from __future__ import annotations

import time

import boto3
import pytest

from nodemedic.contracts.kube import HEALTH_LABEL
from nodemedic.origin.signing import key_id, sign
from nodemedic.remediate.decision import UNPROVEN_NOTE
from tests.support.flow import GPU, World, asg_instance, our_taints
from tests.support.origin import register
from tests.support.remediation import EXAMPLES, REGION

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]
REPLACE, REBOOT = EXAMPLES["nvidia-xid-79"], EXAMPLES["nvidia-xid-48"]


def _capped(reason: str, action: str, line: str) -> str:
    return UNPROVEN_NOTE.format(reason=reason, action=action) + line


def test_only_a_line_the_victims_own_agent_signed_gets_it_replaced(world: World) -> None:
    victim, attacker, _ = world.group("p5-forged", 3, **GPU)
    pipeline = world.pipelines["demo"]
    world.key("demo", victim)  # its agent registered at start, as every agent does
    # What anyone holding the agents' shared credential can write into the victim's
    # stream: an unsigned line, and one signed with the attacker node's registered key.
    stolen = world.key("demo", attacker)
    world.put("demo", victim, REPLACE)
    now_ms = int(time.time() * 1000)
    world.put("demo", victim, sign(stolen, victim, now_ms, REBOOT), now_ms)

    forged = pipeline.executions(victim)
    assert [pipeline.finish(e)["status"] for e in forged] == ["SUCCEEDED"] * 2

    node = world.node(victim)
    assert node is not None
    assert HEALTH_LABEL not in node.metadata.labels
    assert not node.spec.unschedulable and our_taints(node) == []
    assert asg_instance(victim)["HealthStatus"] == "Healthy"
    assert victim not in world.hypervisor.reboots
    mails = pipeline.messages(victim)
    assert {m["outcome"] for m in mails} == {"notified"}
    assert sorted(m["evidence_line"] for m in mails) == [
        _capped(f"key {key_id(stolen)} is not registered by {victim}", "reboot", REBOOT),
        _capped("unsigned", "replace", REPLACE),
    ]

    world.ship("demo", victim, REPLACE)

    (acted,) = set(pipeline.executions(victim)) - set(forged)
    assert pipeline.finish(acted)["status"] == "SUCCEEDED"
    assert world.node(victim) is None
    assert asg_instance(victim)["LifecycleState"] == "Terminating"
    assert world.node(attacker) is not None


def test_a_key_the_node_had_before_it_rebooted_signs_no_replace(world: World) -> None:
    """A boot's key lies in the node's state dir; whoever kept it from before a reboot signs
    with it a line the classifier reads with no key cached, after the new boot registered."""
    victim, _, _ = world.group("p5-old-key", 3, **GPU)
    pipeline = world.pipelines["demo"]
    kept = world.key("demo", victim)
    old_boot = world.node(victim).status.node_info.boot_id  # type: ignore[union-attr]
    logs, kms = (boto3.client(name, region_name=REGION) for name in ("logs", "kms"))
    register(logs, kms, "demo", victim, "boot-after-the-reboot")
    now_ms = int(time.time() * 1000) + 1
    world.put("demo", victim, sign(kept, victim, now_ms, REPLACE), now_ms)

    (execution,) = pipeline.executions(victim)
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"

    assert world.node(victim) is not None
    assert asg_instance(victim)["HealthStatus"] == "Healthy"
    (mail,) = pipeline.messages(victim)
    assert mail["outcome"] == "notified"
    why = (
        f"key {key_id(kept)} is of boot {old_boot}, and boot boot-after-the-reboot registered "
        "before the line was written"
    )
    assert mail["evidence_line"] == _capped(why, "replace", REPLACE)
