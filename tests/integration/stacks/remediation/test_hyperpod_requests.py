"""Every SageMaker request the synthesized state machine makes, checked against botocore's
service model with its Stubber on a real client, answered with what the local world's moto
answers (so its additions are checked against the model too), and the IAM those requests
are allowed by: the listed clusters' ARNs only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from stacks.synth import synth_template
from tests.integration.stacks.remediation.test_hyperpod import HYPER
from tests.support.remediation import REGION, state_machine_definition
from world.aws.hyperpod import create_hyperpod_cluster, hyperpod_calls

SAGEMAKER_TASK = re.compile(r":states:::aws-sdk:sagemaker:(\w+)$")
ORDER = ("describeClusterNode", "describeCluster", "batchRebootClusterNodes")
"""The calls in the order a remediation makes them; the replacement last (its node goes)."""


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_template(HYPER)


@pytest.fixture
def world() -> Iterator[tuple[Any, str]]:
    """moto with HyperPod's calls and one cluster; the client and a node's instance id."""
    with mock_aws(), hyperpod_calls():
        ec2 = boto3.client("ec2", region_name=REGION)
        (instance,) = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=1, MaxCount=1)[
            "Instances"
        ]
        sagemaker = boto3.client("sagemaker", region_name=REGION)
        create_hyperpod_cluster(
            sagemaker, "ml-cluster", {"workers": [instance["InstanceId"]]}, node_recovery="None"
        )
        yield sagemaker, instance["InstanceId"]


def _at(path: str, data: dict[str, Any]) -> Any:
    found: Any = data
    for part in path.removeprefix("$.").split("."):
        found = found[part]
    return found


def _rendered(parameters: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The task's Parameters over the execution's state ``data``, as Step Functions does."""
    return {
        key.removesuffix(".$"): _at(value, data) if key.endswith(".$") else value
        for key, value in parameters.items()
    }


def _snake(action: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


def _requests(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(state, action, parameters) of each SageMaker task, in the order a replacement
    makes them."""
    found = []
    for name, task in state_machine_definition(template)["States"].items():
        match = SAGEMAKER_TASK.search(task.get("Resource", ""))
        if match:
            found.append((name, match.group(1), task["Parameters"]))
    return sorted(found, key=lambda t: ORDER.index(t[1]) if t[1] in ORDER else len(ORDER))


def test_every_sagemaker_request_and_answer_fits_botocore_s_model(
    template: dict[str, Any], world: tuple[Any, str]
) -> None:
    moto_client, instance_id = world
    data = {
        "decision": {"instance_id": instance_id},
        "keys": {"instance_ids": [instance_id]},
        "target": {"cluster": "ml-cluster"},
    }
    requests = _requests(template)
    assert {action for _, action, _ in requests} == {*ORDER, "batchReplaceClusterNodes"}
    real = boto3.client("sagemaker", region_name=REGION)
    for name, action, parameters in requests:
        if name == "Find HyperPod node 2":
            continue  # ml-auto exists only in the flow tests' world; same request shape
        sent = _rendered(parameters, data)
        answer = getattr(moto_client, _snake(action))(**sent)
        answer.pop("ResponseMetadata")
        with Stubber(real) as stub:
            stub.add_response(_snake(action), answer, sent)
            assert getattr(real, _snake(action))(**sent) == answer, name
            stub.assert_no_pending_responses()
    assert answer["Successful"] == [instance_id]


def test_the_sagemaker_calls_are_allowed_on_the_listed_clusters_only(
    template: dict[str, Any],
) -> None:
    allowed = [
        (statement["Action"], statement["Resource"])
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if str(statement["Action"]).startswith("sagemaker:")
    ]
    actions = {action for action, _ in allowed}
    assert actions == {
        "sagemaker:describeClusterNode",
        "sagemaker:describeCluster",
        "sagemaker:batchRebootClusterNodes",
        "sagemaker:batchReplaceClusterNodes",
    }
    for _, resources in allowed:
        for resource in resources if isinstance(resources, list) else [resources]:
            text = "".join(p if isinstance(p, str) else "" for p in resource["Fn::Join"][1])
            assert re.fullmatch(r"arn::sagemaker:::cluster/(abcdef123456|bcdef1234567)", text)
