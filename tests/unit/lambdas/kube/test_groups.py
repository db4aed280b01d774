"""The kube Lambda's ``group_size`` op: a node group's size, and no group for one gone."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from lambdas.kube.groups import group_size
from nodemedic.remediate.policy import NO_GROUP
from world.aws.stack import node_group

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


def test_the_size_is_the_groups_desired_capacity_and_nothing_of_its_instances() -> None:
    node_group("p5-big", 40, region=REGION)

    assert group_size("p5-big") == {"name": "p5-big", "size": 40, "found": True}


def test_a_group_gone_since_is_no_group_as_for_an_instance_in_none() -> None:
    assert group_size("p5-deleted") == {"name": NO_GROUP, "size": 0, "found": False}


def test_the_group_is_asked_for_without_its_instances() -> None:
    """A group of thousands answers in a few hundred bytes, not ~317 an instance."""
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    group = {
        "AutoScalingGroupName": "p5-big",
        "MinSize": 0,
        "MaxSize": 2000,
        "DesiredCapacity": 1500,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-1a"],
        "HealthCheckType": "EC2",
        "CreatedTime": "2026-12-03T00:00:00Z",
    }
    with Stubber(autoscaling) as stub:
        stub.add_response(
            "describe_auto_scaling_groups",
            {"AutoScalingGroups": [group]},
            {"AutoScalingGroupNames": ["p5-big"], "IncludeInstances": False},
        )
        assert group_size("p5-big", autoscaling)["size"] == 1500
        stub.assert_no_pending_responses()
