"""Planned repairs (``planned_repairs``): the EventBridge rules for AWS's advance notices, the
planned Lambda that turns them into decisions, and the planned state machine that waits for
each decision's ``act_at`` before it starts the remediation (docs/deploy.md, "Planned
repairs: before AWS acts").

A Lambda, not an input transformer on a Step Functions target: a transformer copies fields,
and a notice needs its RFC 1123 deadline parsed and the lead time taken off it, the instance
id taken out of an ARN, a Capacity Block's instances listed and the instances of groups
nodemedic does not act on dropped. The planned machine has a role of its own: it starts
remediations, which the remediation's own role cannot be granted without a cycle.
"""

from __future__ import annotations

import json
from typing import Final

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.contracts.env import ENV_PLANNED, ENV_STATE_MACHINE_ARN
from nodemedic.remediate import planned
from nodemedic.settings import ClusterSettings
from stacks.functions import PythonFunction
from stacks.nag import acknowledge
from stacks.remediation.kit.machine import state_machine
from stacks.remediation.kit.starts import start_remediation
from stacks.unscoped import UNSCOPED_ACTIONS, unscoped
from stacks.unscoped import reason as unscoped_reason

PLANNED_TIMEOUT: Final = 365 * 86400
"""A planned execution waits until its notice's ``act_at``, weeks ahead at most (AWS Health
sends scheduled events about two weeks before); a year is Step Functions' longest."""


def wait_then_remediate(scope: Construct, remediation: sfn.IStateMachine) -> sfn.IChainable:
    """The planned machine's states: its input is one planned decision record."""
    done = sfn.Succeed(scope, "Remediation started")
    already = sfn.Pass(scope, "Already started")
    already.next(done)
    begin = start_remediation(
        scope,
        "Start remediation",
        remediation,
        name=sfn.JsonPath.string_at("$.decision_id"),
        input=sfn.TaskInput.from_json_path_at("$"),
        already=already,
    )
    begin.next(done)
    wait = sfn.Wait(scope, "Wait for act_at", time=sfn.WaitTime.timestamp_path("$.act_at"))
    return wait.next(begin)


def patterns(settings: ClusterSettings) -> dict[str, events.EventPattern]:
    """One rule per kind of notice; Spot only where a group runs Spot."""
    found = {
        "HealthScheduled": events.EventPattern(
            source=[planned.HEALTH_SOURCE],
            detail_type=[planned.HEALTH_DETAIL_TYPE],
            detail={"service": ["EC2"], "eventTypeCode": sorted(planned.HEALTH_CODES)},
        ),
        "CapacityBlockExpiring": events.EventPattern(
            source=[planned.EC2_SOURCE], detail_type=list(planned.CAPACITY_BLOCK_DETAIL_TYPES)
        ),
    }
    if settings.spot_groups:
        found["SpotInterruption"] = events.EventPattern(
            source=[planned.EC2_SOURCE], detail_type=[planned.SPOT_DETAIL_TYPE]
        )
    return found


class Planned(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        code: lambda_.Code,
        remediation: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, id)
        within = Construct(self, "Wait")
        self.state_machine = state_machine(
            within,
            settings=settings,
            states=wait_then_remediate(within, remediation),
            comment=f"nodemedic: wait for a notice's lead time on cluster {settings.name}",
            timeout_seconds=PLANNED_TIMEOUT,
        )
        function = PythonFunction(
            self,
            "Translate",
            settings=settings,
            code=code,
            handler="lambdas.planned.handler.handler",
            service="nodemedic-planned",
            description="AWS notices of instances going away -> planned remediations",
            environment={
                ENV_STATE_MACHINE_ARN: self.state_machine.state_machine_arn,
                ENV_PLANNED: json.dumps(
                    {
                        "cluster": settings.name,
                        "node_groups": list(settings.node_groups),
                        "spot_groups": list(settings.spot_groups),
                        "lead_time": settings.planned_lead_time,
                    }
                ),
            },
        )
        self.function = function.function
        self.state_machine.grant_start_execution(self.function)
        described = ["ec2:DescribeInstances", "autoscaling:DescribeAutoScalingInstances"]
        function.role.add_to_policy(
            iam.PolicyStatement(actions=described, resources=unscoped("ec2", "DescribeInstances"))
        )
        traced = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
        acknowledge(function.role, "IAM5[Resource::*]", unscoped_reason(described + traced))
        # Execution logging and tracing, as every state machine's role (stacks/unscoped.py).
        acknowledge(
            self.state_machine.role,
            "IAM5[Resource::*]",
            unscoped_reason(list(UNSCOPED_ACTIONS)),
        )
        self.rules = [
            events.Rule(
                self,
                name,
                description=f"nodemedic {settings.name}: plan a repair before AWS acts",
                event_pattern=pattern,
                targets=[targets.LambdaFunction(self.function)],
            )
            for name, pattern in patterns(settings).items()
        ]
