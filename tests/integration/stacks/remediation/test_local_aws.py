"""The local AWS world: templates deployed into moto, handlers run in-process, and moto's
EC2 and Auto Scaling calls reaching the simulated machines."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodemedic.catalog import load_catalog
from nodemedic.detect.filterpattern import subscription_filter_patterns
from tests.support.remediation import (
    MOTO,
    REGION,
    finished,
    instances,
    state_machine_definition,
)
from world.aws.cloudformation import TemplateError
from world.aws.hypervisor import Hypervisor, machines
from world.aws.inprocess import ThreadEnviron, handlers_in_process
from world.aws.motopatch import atomic_writes
from world.aws.resources import SKIPPED
from world.aws.stack import deploy

ROLE = {
    "Type": "AWS::IAM::Role",
    "Properties": {
        "AssumeRolePolicyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    },
}


def function(handler: str, **environment: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Handler": handler,
            "Runtime": "python3.11",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"S3Bucket": "assets", "S3Key": "code.zip"},
            "Environment": {"Variables": environment},
        },
    }


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config=MOTO), handlers_in_process(), atomic_writes():
        yield


def invoke(name: str, event: dict[str, Any]) -> dict[str, Any]:
    response = boto3.client("lambda", region_name=REGION).invoke(
        FunctionName=name, Payload=json.dumps(event), LogType="Tail"
    )
    return {
        "error": response.get("FunctionError"),
        "payload": json.loads(response["Payload"].read()),
        "log": base64.b64decode(response["LogResult"]).decode(),
    }


def test_the_whole_stack_deploys_with_its_references_resolved(
    aws: None, default_template: dict[str, Any]
) -> None:
    deployment = deploy(default_template, stack_name="nodemedic-demo")

    # Every resource is created, or skipped with the reason moto can do without it.
    resources = default_template["Resources"]
    assert set(deployment.resources) | set(deployment.skipped) == set(resources)
    for logical_id, reason in deployment.skipped.items():
        assert reason == SKIPPED[resources[logical_id]["Type"]]
    assert {resources[k]["Type"] for k in deployment.skipped} == {
        "AWS::EKS::AccessEntry",
        "AWS::EKS::PodIdentityAssociation",
    }
    outputs = deployment.outputs
    assert set(outputs) == set(default_template["Outputs"])
    assert not any("Fn::" in value or "${" in value for value in outputs.values())
    # The state machine: the template's states, every reference filled in.
    sfn = boto3.client("stepfunctions", region_name=REGION)
    text = sfn.describe_state_machine(stateMachineArn=outputs["StateMachineArn"])["definition"]
    assert "Fn::" not in text
    assert "${" not in text
    states = json.loads(text)["States"]
    assert set(states) == set(state_machine_definition(default_template)["States"])
    ledger = deployment.find("AWS::DynamoDB::Table", "RemediationLedger").ref
    assert states["Record decision"]["Parameters"]["TableName"] == ledger
    kube = deployment.find("AWS::Lambda::Function", "KubeFunction")
    assert states["Locate node"]["Resource"] == kube.arn
    assert states["Notify outcome"]["Parameters"]["TopicArn"] == outputs["TopicArn"]
    functions = boto3.client("lambda", region_name=REGION)
    handler = functions.get_function(FunctionName=kube.ref)["Configuration"]["Handler"]
    assert handler == "lambdas.kube.handler.handler"
    # The classifier: fed by the node log group, starting the state machine.
    classifier = deployment.find("AWS::Lambda::Function", "IngestClassifierFunction")
    subscriptions = boto3.client("logs", region_name=REGION).describe_subscription_filters(
        logGroupName=outputs["LogGroup"]
    )["subscriptionFilters"]
    assert len(subscriptions) == len(subscription_filter_patterns(load_catalog()))
    assert {s["destinationArn"] for s in subscriptions} == {classifier.arn}
    configuration = functions.get_function_configuration(FunctionName=classifier.ref)
    # moto keeps no DeadLetterConfig; the queue is there, as the output says.
    assert (
        deployment.find("AWS::SQS::Queue", "IngestDeadLetters").ref
        == (outputs["DeadLetterQueueUrl"])
    )
    assert (
        configuration["Environment"]["Variables"]["STATE_MACHINE_ARN"]
        == (outputs["StateMachineArn"])
    )
    # The topic is encrypted with the stack's key; the agents' policy is on their role.
    topic = boto3.client("sns", region_name=REGION).get_topic_attributes(
        TopicArn=outputs["TopicArn"]
    )["Attributes"]
    assert topic["KmsMasterKeyId"] == deployment.find("AWS::KMS::Key", "Notifications").arn
    attached = boto3.client("iam", region_name=REGION).list_attached_role_policies(
        RoleName=deployment.find("AWS::IAM::Role", "AgentRole").ref
    )["AttachedPolicies"]
    assert [p["PolicyArn"] for p in attached] == [outputs["AgentPolicyArn"]]
    alarms = boto3.client("cloudwatch", region_name=REGION).describe_alarms(MaxRecords=100)
    assert len(alarms["MetricAlarms"]) == len(deployment.of_type("AWS::CloudWatch::Alarm"))


def test_deploy_resolves_sub_select_and_split(aws: None) -> None:
    template = {
        "Resources": {
            "Role": ROLE,
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "dead-letters"}},
            "Fn": function(
                "tests.support.handlers.echo",
                GREETING={"Fn::Sub": "${AWS::Region}/${Queue.QueueName}/${!literal}"},
                ZONE={"Fn::Select": [1, {"Fn::Split": [",", "a,b,c"]}]},
            ),
        }
    }
    deployment = deploy(template, stack_name="t")
    variables = boto3.client("lambda", region_name=REGION).get_function_configuration(
        FunctionName=deployment.resources["Fn"].ref
    )["Environment"]["Variables"]
    assert variables == {"GREETING": "us-east-1/dead-letters/${literal}", "ZONE": "b"}


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"Cluster": {"Type": "AWS::EKS::Cluster", "Properties": {}}}, "AWS::EKS::Cluster"),
        (
            {
                "Queue": {
                    "Type": "AWS::SQS::Queue",
                    "Properties": {"QueueName": {"Fn::If": ["C", "a", "b"]}},
                }
            },
            "Fn::If",
        ),
        (
            {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "Nope"}}}},
            "Nope",
        ),
    ],
)
def test_deploy_refuses_what_it_cannot_create_faithfully(
    aws: None, resources: dict[str, Any], message: str
) -> None:
    with pytest.raises(TemplateError, match=message):
        deploy({"Resources": resources})


def test_a_lambda_invocation_runs_the_handler_with_the_function_environment(aws: None) -> None:
    deployment = deploy({"Resources": {"Role": ROLE, "Fn": function(
        "tests.support.handlers.echo", GREETING="hello"
    )}})  # fmt: skip
    name = deployment.resources["Fn"].ref
    result = invoke(name, {"node": "ip-10-0-0-1"})
    assert result["error"] is None
    assert result["payload"] == {
        "event": {"node": "ip-10-0-0-1"},
        "greeting": "hello",
        "function": name,
    }


def test_a_failing_handler_is_a_function_error_step_functions_can_catch(aws: None) -> None:
    deployment = deploy(
        {"Resources": {"Role": ROLE, "Fn": function("tests.support.handlers.refuse")}}
    )
    fn = deployment.resources["Fn"]
    result = invoke(fn.ref, {"node": "ip-10-0-0-9"})
    assert result["error"] is not None
    assert result["payload"]["errorType"] == "LookupError"
    assert result["payload"]["errorMessage"] == "no such node: ip-10-0-0-9"
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": fn.arn,
                "Catch": [{"ErrorEquals": ["LookupError"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        },
    }
    arn = sfn.create_state_machine(
        name="catch",
        definition=json.dumps(definition),
        roleArn=deployment.resources["Role"].arn,
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, name="one", input="{}")["executionArn"]
    machine_events = _wait_events(sfn, execution)
    assert "SucceedStateEntered" in machine_events


def _wait_events(sfn: Any, execution: str) -> list[str]:
    finished(sfn, execution)
    return [e["type"] for e in sfn.get_execution_history(executionArn=execution)["events"]]


def test_subscription_delivery_runs_the_handler_on_the_awslogs_payload(aws: None) -> None:
    template = {
        "Resources": {
            "Role": ROLE,
            "Fn": function("tests.support.handlers.echo", GREETING="hi"),
            "Group": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/x/nodes"}},
            "Filter": {
                "Type": "AWS::Logs::SubscriptionFilter",
                "Properties": {
                    "LogGroupName": {"Ref": "Group"},
                    "FilterPattern": "",
                    "DestinationArn": {"Fn::GetAtt": ["Fn", "Arn"]},
                },
            },
        }
    }
    deployment = deploy(template)
    logs = boto3.client("logs", region_name=REGION)
    logs.create_log_stream(logGroupName="/x/nodes", logStreamName="i-0abc12345/kmsg")
    logs.put_log_events(
        logGroupName="/x/nodes",
        logStreamName="i-0abc12345/kmsg",
        logEvents=[{"timestamp": 1_795_000_000_000, "message": "NVRM: Xid 79"}],
    )
    output = logs.filter_log_events(logGroupName=f"/aws/lambda/{deployment.resources['Fn'].ref}")[
        "events"
    ]
    assert any('"awslogs"' in e["message"] for e in output)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.changed = threading.Condition()

    def __call__(self, what: str) -> Any:
        def record(instance_id: str) -> None:
            with self.changed:
                self.calls.append((what, instance_id))
                self.changed.notify_all()

        return record

    def wait_for(self, call: tuple[str, str]) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: call in self.calls, timeout=60), self.calls


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def test_a_reboot_reaches_the_machine_unless_it_hangs(aws: None, recorder: Recorder) -> None:
    first, second = instances("ng-1", 2)
    hypervisor = Hypervisor(on_reboot=recorder("reboot"), on_power_off=recorder("off"))
    hypervisor.hang(second)
    with machines(hypervisor):
        boto3.client("ec2", region_name=REGION).reboot_instances(InstanceIds=[first, second])
        recorder.wait_for(("reboot", first))
    assert ("reboot", second) not in recorder.calls
    assert hypervisor.reboots == [first, second]


def test_a_machine_action_due_after_the_world_ended_never_runs(
    aws: None, recorder: Recorder
) -> None:
    """The world's moto and kubelets stop with it: a reboot landing later would act on
    nothing there (and fail, noisily, in a thread of a finished run)."""
    (first,) = instances("ng-1", 1)
    hypervisor = Hypervisor(on_reboot=recorder("reboot"), on_power_off=recorder("off"), delay=0.5)
    with machines(hypervisor):
        boto3.client("ec2", region_name=REGION).reboot_instances(InstanceIds=[first])
    time.sleep(1.0)  # past the delay: a timer not cancelled would have fired by now
    assert hypervisor.reboots == [first]
    assert recorder.calls == []


def test_an_unhealthy_instance_is_terminating_and_its_machine_goes_away(
    aws: None, recorder: Recorder
) -> None:
    first, _ = instances("ng-1", 2)
    hypervisor = Hypervisor(on_reboot=recorder("reboot"), on_power_off=recorder("off"))
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    with machines(hypervisor):
        autoscaling.set_instance_health(
            InstanceId=first, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False
        )
        recorder.wait_for(("off", first))
    (instance,) = autoscaling.describe_auto_scaling_instances(InstanceIds=[first])[
        "AutoScalingInstances"
    ]
    assert (instance["HealthStatus"].upper(), instance["LifecycleState"]) == (
        "UNHEALTHY",
        "Terminating",
    )
    reservation = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[first])
    assert reservation["Reservations"][0]["Instances"][0]["State"]["Name"] == "shutting-down"


def test_the_group_replaces_an_unhealthy_instance_when_asked_to(
    aws: None, recorder: Recorder
) -> None:
    first, second = instances("ng-1", 2)
    hypervisor = Hypervisor(
        on_reboot=recorder("reboot"),
        on_power_off=recorder("off"),
        on_launch=recorder("launch"),
        terminate_after=0,
    )
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    with machines(hypervisor):
        autoscaling.set_instance_health(InstanceId=first, HealthStatus="Unhealthy")
        with recorder.changed:
            assert recorder.changed.wait_for(
                lambda: any(what == "launch" for what, _ in recorder.calls), timeout=5
            )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["ng-1"])
    members = {i["InstanceId"] for i in group["AutoScalingGroups"][0]["Instances"]}
    (launched,) = [i for what, i in recorder.calls if what == "launch"]
    assert members == {second, launched}
    state = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[first])
    assert state["Reservations"][0]["Instances"][0]["State"]["Name"] == "terminated"


def test_a_handlers_variables_are_seen_by_its_own_thread_only(aws: None) -> None:
    seen: dict[str, str | None] = {}
    inside, done = threading.Event(), threading.Event()

    def elsewhere() -> None:
        inside.wait(5)
        seen["elsewhere"] = os.environ.get("GREETING")
        done.set()

    other = threading.Thread(target=elsewhere)
    other.start()
    environ = os.environ
    assert isinstance(environ, ThreadEnviron)
    with environ.overlay({"GREETING": "hello"}):
        os.environ["FAREWELL"] = "bye"
        inside.set()
        done.wait(5)
        seen["inside"] = os.environ.get("GREETING")
    other.join()
    assert seen == {"elsewhere": None, "inside": "hello"}
    assert "GREETING" not in os.environ and "FAREWELL" not in os.environ
