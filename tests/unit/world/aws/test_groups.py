"""The world's Auto Scaling answers ``IncludeInstances`` false as AWS does, which moto does
not: the groups without their instances, which stay in the group."""

from __future__ import annotations

import boto3
from moto import mock_aws

from world.aws.groups import instances_left_out
from world.aws.stack import node_group

REGION = "us-east-1"


def test_a_group_described_without_instances_lists_none_and_keeps_them() -> None:
    with mock_aws(), instances_left_out():
        node_group("p5", 3, region=REGION)
        autoscaling = boto3.client("autoscaling", region_name=REGION)
        (bare,) = autoscaling.describe_auto_scaling_groups(
            AutoScalingGroupNames=["p5"], IncludeInstances=False
        )["AutoScalingGroups"]
        (whole,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["p5"])[
            "AutoScalingGroups"
        ]

    assert (bare["DesiredCapacity"], bare.get("Instances", [])) == (3, [])
    assert len(whole["Instances"]) == 3
