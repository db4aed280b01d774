"""AWS's advance notices → planned remediations (``nodemedic.remediate.planned``).

EventBridge delivers each notice here (rules in ``stacks/planned.py``). The instances it
names (a Capacity Block's: those EC2 lists in its reservation) are kept where nodemedic may
act (their Auto Scaling group in ``node_groups``, a Spot warning's in ``spot_groups``);
each becomes a decision and starts the planned state machine, named by the decision id, so
a notice delivered twice starts nothing twice. The output names the notice and the
decisions handed on. An event of a kind nodemedic acts on that cannot be read is counted
(``UnreadableNotices``) and logged, and the invocation succeeds: retrying it would read it
the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final

import boto3

from lambdas.observability import logger, publish_count
from lambdas.planned.env import PlannedEnv, planned_env
from lambdas.recorded import record_start
from nodemedic.contracts.metrics import CLUSTER_DIMENSION, UNREADABLE_NOTICES_METRIC
from nodemedic.remediate.decision import evidence
from nodemedic.remediate.planned import (
    Notice,
    NoticeError,
    acts_on,
    notice_of,
    planned_decision,
)

BATCH: Final = 50
"""Instances per DescribeAutoScalingInstances call, its maximum."""


def reserved(ec2: Any, reservation_id: str) -> tuple[str, ...]:
    """The running (or starting) instances of a capacity reservation."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": "capacity-reservation-id", "Values": [reservation_id]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )
    return tuple(
        sorted(
            instance["InstanceId"]
            for page in pages
            for reservation in page["Reservations"]
            for instance in reservation["Instances"]
        )
    )


def groups_of(autoscaling: Any, instances: Iterable[str]) -> dict[str, str]:
    """instance id → Auto Scaling group name, for the instances in one."""
    listed = sorted(instances)
    found: dict[str, str] = {}
    for at in range(0, len(listed), BATCH):
        answer = autoscaling.describe_auto_scaling_instances(InstanceIds=listed[at : at + BATCH])
        for instance in answer["AutoScalingInstances"]:
            found[instance["InstanceId"]] = instance["AutoScalingGroupName"]
    return found


def plan_notice(
    notice: Notice, env: PlannedEnv, *, ec2: Any, autoscaling: Any, now: datetime
) -> list[dict[str, Any]]:
    """The decisions of ``notice``, one per instance nodemedic may act on."""
    instances = notice.instance_ids or reserved(ec2, notice.reservation_id)
    groups = groups_of(autoscaling, instances) if instances else {}
    return [
        planned_decision(env.cluster, instance, notice, lead_time=env.lead_time, now=now)
        for instance in instances
        if acts_on(notice, groups.get(instance), env.node_groups, env.spot_groups)
    ]


def start(
    decisions: list[dict[str, Any]], env: PlannedEnv, *, sfn: Any, dynamodb: Any
) -> list[str]:
    """Start the planned state machine once per decision; the ids handed on. Named by the
    decision id: Step Functions answers a start of a running execution's name and input
    with that execution, and refuses one whose execution ended (a notice delivered again
    after its repair), so a notice seen twice is planned once. Each is recorded first for
    the remediation it starts at ``act_at`` (``nodemedic.remediate.recorded``)."""
    handed = []
    for decision in decisions:
        act_at = datetime.fromisoformat(decision["act_at"]).timestamp()
        record_start(dynamodb, env.ledger_table, decision, starts_at=act_at)
        try:
            sfn.start_execution(
                stateMachineArn=env.state_machine_arn,
                name=decision["decision_id"],
                input=json.dumps(decision),
            )
        except sfn.exceptions.ExecutionAlreadyExists:
            continue
        handed.append(decision["decision_id"])
    return handed


def _shown(event: Any) -> str:
    """The event as a log shows it: cut, escaped, and never an error of its own."""
    try:
        text = json.dumps(event, default=str)
    except (RecursionError, TypeError, ValueError):
        text = f"<{type(event).__name__} that cannot be written as JSON>"
    return evidence(text)


def handler(event: Any, context: Any) -> dict[str, Any]:
    env = planned_env()
    try:
        notice = notice_of(event)
    except NoticeError as exc:
        # A retry reads the same payload the same way: the invocation succeeds, and the
        # count and the log say what was dropped (EventBridge keeps no copy).
        publish_count(UNREADABLE_NOTICES_METRIC, 1, {CLUSTER_DIMENSION: env.cluster})
        logger.warning("unreadable notice", extra={"reason": str(exc), "event": _shown(event)})
        return {"notice": None, "planned": [], "unreadable": str(exc)}
    if notice is None:
        return {"notice": None, "planned": []}
    decisions = plan_notice(
        notice,
        env,
        ec2=boto3.client("ec2"),
        autoscaling=boto3.client("autoscaling"),
        now=datetime.now(UTC),
    )
    handed = start(
        decisions, env, sfn=boto3.client("stepfunctions"), dynamodb=boto3.client("dynamodb")
    )
    return {"notice": notice.fault_id, "planned": handed}
