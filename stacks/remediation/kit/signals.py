"""What the flow tells the world: metrics (namespace ``NodeMedic`` unless the fault's own)
and SNS messages. Every datum carries the dimensions ``Cluster`` and ``NodeGroup``; every
message says who, what and the evidence line, then the step's own fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.metrics import (
    CLUSTER_DIMENSION,
    IN_REMEDIATION_METRIC,
    METRICS_NAMESPACE,
    NODE_GROUP_DIMENSION,
    REMEDIATIONS_METRIC,
    SUBSTRATE_DIMENSION,
)
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.unscoped import unscoped


def remediations(outcome: str) -> dict[str, Any]:
    """One ``Remediations`` datum, by the action planned, the ``outcome`` and the node's
    substrate (the plan's, ``none`` before ``"Plan"`` named it)."""
    return {
        "name": REMEDIATIONS_METRIC,
        "value": 1,
        "unit": "Count",
        "dimensions": [
            {"Name": "Action", "Value": sfn.JsonPath.string_at(state.ACTION)},
            {"Name": "Outcome", "Value": outcome},
            {"Name": SUBSTRATE_DIMENSION, "Value": sfn.JsonPath.string_at(state.SUBSTRATE)},
        ],
    }


def metrics(
    flow: Flow,
    id: str,
    namespace: str,
    data: Sequence[Mapping[str, Any]],
    *,
    guard: bool = True,
) -> tasks.CallAwsService:
    """``data``: ``{name, value, unit}`` and any extra ``dimensions``."""
    dimensions = [
        {"Name": CLUSTER_DIMENSION, "Value": sfn.JsonPath.string_at(state.CLUSTER)},
        {"Name": NODE_GROUP_DIMENSION, "Value": sfn.JsonPath.string_at(state.GROUP_NAME)},
    ]
    return flow.aws(
        id,
        "cloudwatch",
        "putMetricData",
        {
            "Namespace": namespace,
            "MetricData": [
                {
                    "MetricName": m["name"],
                    "Value": m["value"],
                    "Unit": m["unit"],
                    "Dimensions": dimensions + list(m.get("dimensions", [])),
                }
                for m in data
            ],
        },
        iam_resources=unscoped("cloudwatch", "putMetricData"),
        guard=guard,
    )


def one_metric(
    flow: Flow, id: str, name: str, value_path: str, unit: str, *, guard: bool = True
) -> tasks.CallAwsService:
    """One ``NodeMedic`` datum whose value is the number at ``value_path``."""
    return metrics(
        flow,
        id,
        METRICS_NAMESPACE,
        [{"name": name, "value": sfn.JsonPath.number_at(value_path), "unit": unit}],
        guard=guard,
    )


def cluster_metric(
    flow: Flow, id: str, name: str, value: Any, *, cluster: str, guard: bool = True
) -> tasks.CallAwsService:
    """One ``NodeMedic`` datum of the whole cluster: dimension ``Cluster`` only (``cluster``,
    the name or a path to it)."""
    return flow.aws(
        id,
        "cloudwatch",
        "putMetricData",
        {
            "Namespace": METRICS_NAMESPACE,
            "MetricData": [
                {
                    "MetricName": name,
                    "Value": value,
                    "Unit": "Count",
                    "Dimensions": [{"Name": CLUSTER_DIMENSION, "Value": cluster}],
                }
            ],
        },
        iam_resources=unscoped("cloudwatch", "putMetricData"),
        guard=guard,
    )


def in_remediation(flow: Flow, id: str, count: str, *, guard: bool = True) -> tasks.CallAwsService:
    """The gauge of the group's breaker holders (nodes in remediation), as it now is."""
    return one_metric(flow, id, IN_REMEDIATION_METRIC, count, "Count", guard=guard)


def notify(
    flow: Flow, id: str, subject: str, message: Mapping[str, Any], *, guard: bool = True
) -> tasks.SnsPublish:
    task = tasks.SnsPublish(
        flow.scope,
        id,
        topic=flow.topic,
        subject=subject,
        message=sfn.TaskInput.from_object(
            {
                "decision_id": sfn.JsonPath.string_at(state.decision("decision_id")),
                "cluster": sfn.JsonPath.string_at(state.CLUSTER),
                "node_group": sfn.JsonPath.string_at(state.GROUP_NAME),
                "instance_id": sfn.JsonPath.string_at(state.INSTANCE_ID),
                "node": sfn.JsonPath.string_at(state.NODE_NAME),
                "fault_id": sfn.JsonPath.string_at(state.FAULT_ID),
                "severity": sfn.JsonPath.string_at(state.decision("severity")),
                "evidence_line": sfn.JsonPath.string_at(state.decision("evidence_line")),
                "first_seen": sfn.JsonPath.string_at(state.decision("first_seen")),
                "started_at": sfn.JsonPath.string_at(state.STARTED_AT),
                "actions": sfn.JsonPath.object_at(state.TIMES),
                "execution": sfn.JsonPath.execution_id,
                **message,
            }
        ),
        result_path=sfn.JsonPath.DISCARD,
    )
    return flow.guard(task) if guard else task


def tell_new(flow: Flow, what: str, subject: str, at: str, done: sfn.IChainable) -> sfn.IChainable:
    """One mail with the message at ``at``.new.message when ``at``.new.count is above 0 (a
    kube op that lists what people were not told yet and marks it told), then ``done``."""
    told = tasks.SnsPublish(
        flow.scope,
        f"Notify {what} nodes",
        topic=flow.topic,
        subject=f"nodemedic {flow.settings.name}: {subject}",
        message=sfn.TaskInput.from_json_path_at(f"{at}.new.message"),
        result_path=sfn.JsonPath.DISCARD,
    )
    told.next(done)
    return (
        sfn.Choice(flow.scope, f"Newly {what}?")
        .when(sfn.Condition.number_greater_than(f"{at}.new.count", 0), told)
        .otherwise(done)
    )
