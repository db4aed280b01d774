"""A remediation by hand (``nodemedic reboot|replace``) runs the same state machine as the
classifier's decisions: the breaker holds it like any other, a cluster that does not act
refuses it, and ``nodemedic history`` shows every step with who asked and why.

The world is ``tests.support.flow``'s; the CLI's request runs in-process against it.
"""

from __future__ import annotations

import argparse
import time

import boto3
import pytest

from console.cli.history import records
from console.cli.manual import request
from console.cli.remediations import entry
from nodemedic.contracts.kube import HEALTH_LABEL, TAINT_KEY
from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE
from tests.support.flow import GPU, World, asg_instance
from tests.support.kube import wait_for
from tests.support.remediation import REGION, Pipeline

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


def _asked(pipeline: Pipeline, node: str, action: str, *, wait: float) -> dict[str, object]:
    args = argparse.Namespace(
        command=action,
        node=node,
        reason="ECC errors seen by the job's own checks",
        requested_by="alice@example.com",
        cluster=pipeline.deployment.stack_name.removeprefix("nodemedic-"),
        endpoint_url=None,
        wait=wait,
    )
    return request(
        args, boto3.Session(region_name=REGION), machine=pipeline.arn, table=pipeline.table
    )


def test_a_manual_replace_is_held_by_a_full_breaker_then_replaces_and_has_a_history(
    world: World,
) -> None:
    pipeline = world.pipelines["demo"]
    sick, _ = world.group("p5-manual-held", 2, **GPU)
    # The group's one slot (2 nodes, 20 %) is taken by a remediation of another node.
    pipeline.dynamodb.put_item(
        TableName=pipeline.table,
        Item={
            "pk": {"S": "group#p5-manual-held"},
            "sk": {"S": "breaker"},
            "holders": {"SS": ["i-0000000000000f00d"]},
        },
    )
    pipeline.dynamodb.put_item(
        TableName=pipeline.table,
        Item={
            "pk": {"S": "i-0000000000000f00d"},
            "sk": {"S": "inflight"},
            "decision_id": {"S": "other"},
            "expires_at": {"N": str(int(time.time()) + 3600)},
        },
    )

    shown = _asked(pipeline, world.nodes[sick], "replace", wait=20)

    assert (shown["state"], shown["instance_id"]) == ("held", sick)
    assert "held by the breaker" in str(shown["detail"])
    node = world.node(sick)
    assert node is not None and not node.spec.unschedulable  # held: not touched yet
    # The other remediation ends: its slot is free, the manual one goes on.
    pipeline.dynamodb.delete_item(
        TableName=pipeline.table,
        Key={"pk": {"S": "i-0000000000000f00d"}, "sk": {"S": "inflight"}},
    )
    pipeline.dynamodb.update_item(
        TableName=pipeline.table,
        Key={"pk": {"S": "group#p5-manual-held"}, "sk": {"S": "breaker"}},
        UpdateExpression="DELETE holders :h",
        ExpressionAttributeValues={":h": {"SS": ["i-0000000000000f00d"]}},
    )
    ended = pipeline.finish(str(shown["execution_arn"]))

    assert ended["status"] == "SUCCEEDED"
    assert asg_instance(sick)["HealthStatus"].upper() == "UNHEALTHY"
    (record,) = records(pipeline.dynamodb, pipeline.table, sick)
    history = entry(record)
    assert (history["outcome"], history["source"], history["fault_id"]) == (
        "replaced",
        "manual",
        "manual-replace",
    )
    caller = boto3.client("sts", region_name=REGION).get_caller_identity()["Arn"]
    assert history["triggered_by"] == caller
    assert history["request_reason"] == (
        "ECC errors seen by the job's own checks (on behalf of alice@example.com)"
    )
    steps = [s["step"] for s in history["steps"]]
    assert steps[0] == "open" and steps[-1] == "closed"
    assert {"held", "marking", "draining", "replacing"} <= set(steps)
    assert steps.index("held") < steps.index("marking") < steps.index("replacing")
    assert {c["change"] for c in history["node_changes"]} >= {"marked", "drained"}
    assert float(record[HISTORY_TTL_ATTRIBUTE]) > time.time() + 89 * 86400
    subjects = [m["subject"] for m in pipeline.messages(sick)]
    assert subjects[-1] == f"nodemedic replaced: {sick}"


def test_a_manual_request_where_nodemedic_only_watches_is_refused_and_the_node_untouched(
    world: World,
) -> None:
    pipeline = world.pipelines["watch"]
    sick, _ = world.group("p5-manual", 2, **GPU)

    shown = _asked(pipeline, world.nodes[sick], "reboot", wait=20)

    assert shown["state"] == "refused"
    assert "recovery_mode is None" in str(shown["detail"])
    node = world.node(sick)
    assert node is not None and not node.spec.unschedulable
    assert HEALTH_LABEL not in (node.metadata.labels or {})
    assert not [t for t in node.spec.taints or [] if t.key == TAINT_KEY]
    (mail,) = wait_for(lambda: pipeline.messages(sick), what="the refusal's mail")
    assert mail["subject"] == f"nodemedic refused: {sick}"
