"""Shared pieces of the remediation tests: the synthesized template and its state machine."""

from __future__ import annotations

import json
import os
import time
from functools import cache
from pathlib import Path
from typing import Any

import boto3
import pytest

from nodemedic.local.aws import Deployment
from stacks.settings import ClusterSettings

ROOT = Path(__file__).resolve().parents[2]
# Tiny waits: every loop of the state machine polls once a second.
FAST = {"poll_seconds": 1, "drain_timeout": 4, "reboot_timeout": 4, "breaker_hold": 60}


@cache
def synth_template(settings: ClusterSettings) -> dict[str, Any]:
    """The CloudFormation template ``cdk synth`` produces for the remediation construct,
    in-process and offline."""
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE", "1")
    import aws_cdk as cdk
    from aws_cdk import assertions, aws_lambda, aws_sns

    from stacks.remediation import Remediation

    app = cdk.App()
    stack = cdk.Stack(app, f"nodemedic-{settings.name}")
    kube = aws_lambda.Function(
        stack,
        "Kube",
        runtime=aws_lambda.Runtime.PYTHON_3_11,
        handler="lambdas.kube.handler.handler",
        code=aws_lambda.Code.from_asset(str(ROOT), exclude=["*", ".*", "!lambdas", "!lambdas/**"]),
    )
    topic = aws_sns.Topic(stack, "Topic")
    Remediation(stack, "Remediation", settings=settings, kube_function=kube, topic=topic)
    template: dict[str, Any] = assertions.Template.from_stack(stack).to_json()
    return template


def state_machine_definition(template: dict[str, Any]) -> dict[str, Any]:
    """The definition with each CloudFormation reference replaced by ``${LogicalId}`` or
    ``${LogicalId.Attribute}``, for looking at its states without deploying."""
    (machine,) = (
        r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    )
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else _placeholder(p) for p in parts)
    definition: dict[str, Any] = json.loads(text)
    return definition


def _placeholder(reference: dict[str, Any]) -> str:
    name = reference["Ref"] if "Ref" in reference else ".".join(reference["Fn::GetAtt"])
    return "${" + name + "}"


@pytest.fixture(scope="session")
def default_template() -> dict[str, Any]:
    return synth_template(ClusterSettings(name="demo", node_groups=("ng-1",), **FAST))


REGION = "us-east-1"
MOTO = {"stepfunctions": {"execute_state_machine": True}}


def decision(instance_id: str, cluster: str = "demo", **overrides: Any) -> dict[str, Any]:
    """A Neuron DMA_ERROR decision record (docs/contracts.md) for ``instance_id``."""
    record = {
        "schema": 1,
        "decision_id": f"{instance_id}-dma",
        "cluster": cluster,
        "instance_id": instance_id,
        "fault_id": "neuron-dma-error",
        "component": "neuron",
        "action": "replace",
        "severity": "fatal",
        "condition": "NeuronHasError",
        "condition_status": "True",
        "metric": "NeuronHasError_DMA_ERROR",
        "metric_namespace": "NeuronHealthCheck",
        "health_status": "UnschedulablePendingReplacement",
        "evidence_line": "kernel: neuron 0000:10:1c.0: NEURON_HW_ERR=DMA_ERROR nc=3 queue=7",
        "source": "kmsg",
        "first_seen": "2026-11-22T18:30:00Z",
        "count": 1,
    }
    record.update(overrides)
    return record


def node_group(name: str, size: int) -> list[str]:
    """An Auto Scaling group of ``size`` Trainium instances in moto; their ids."""
    ec2 = boto3.client("ec2", region_name=REGION)
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    template = f"{name}-nodes"
    if not ec2.describe_launch_templates(
        Filters=[{"Name": "launch-template-name", "Values": [template]}]
    )["LaunchTemplates"]:
        image = ec2.describe_images()["Images"][0]["ImageId"]
        ec2.create_launch_template(
            LaunchTemplateName=template,
            LaunchTemplateData={"ImageId": image, "InstanceType": "trn1.32xlarge"},
        )
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": template},
        MinSize=size,
        MaxSize=size,
        DesiredCapacity=size,
        AvailabilityZones=[f"{REGION}a"],
    )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])
    return sorted(i["InstanceId"] for i in group["AutoScalingGroups"][0]["Instances"])


class Inbox:
    """The topic's messages, read through an SQS subscription as a person's mail would be."""

    def __init__(self, topic_arn: str) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.url = self.sqs.create_queue(QueueName=f"inbox-{topic_arn.rsplit(':', 1)[1]}")[
            "QueueUrl"
        ]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        boto3.client("sns", region_name=REGION).subscribe(
            TopicArn=topic_arn, Protocol="sqs", Endpoint=arn
        )
        self.received: list[dict[str, Any]] = []

    def messages(self) -> list[dict[str, Any]]:
        while True:
            batch = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not batch:
                return self.received
            for message in batch:
                envelope = json.loads(message["Body"])
                self.received.append(
                    {"subject": envelope.get("Subject"), **json.loads(envelope["Message"])}
                )
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])

    def about(self, instance_id: str) -> list[dict[str, Any]]:
        return [m for m in self.messages() if m.get("instance_id") == instance_id]


class Machine:
    """One deployed remediation state machine and what it writes to."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.arn = deployment.find("AWS::StepFunctions::StateMachine").ref
        self.table = deployment.find("AWS::DynamoDB::Table").ref
        self.inbox = Inbox(deployment.find("AWS::SNS::Topic").ref)
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.dynamodb = boto3.client("dynamodb", region_name=REGION)

    def start(self, record: dict[str, Any]) -> str:
        arn: str = self.sfn.start_execution(
            stateMachineArn=self.arn, name=record["decision_id"], input=json.dumps(record)
        )["executionArn"]
        return arn

    def finish(self, execution_arn: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result: dict[str, Any] = self.sfn.describe_execution(executionArn=execution_arn)
            if result["status"] != "RUNNING":
                return result
            time.sleep(0.1)
        raise TimeoutError(f"{execution_arn} still running after {timeout} s")

    def run(self, record: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        return self.finish(self.start(record), timeout)

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        found = self.dynamodb.get_item(
            TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        ).get("Item")
        if found is None:
            return None
        return {name: next(iter(value.values())) for name, value in found.items()}

    def ledger(self, record: dict[str, Any]) -> dict[str, Any] | None:
        return self.item(record["instance_id"], f"decision#{record['decision_id']}")


def metric_names(namespace: str) -> set[str]:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    return {m["MetricName"] for m in cloudwatch.list_metrics(Namespace=namespace)["Metrics"]}
