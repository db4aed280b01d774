"""An instance run with the id a Karpenter Node's provider ID names (``world.aws.instances``):
the Node's agent proves its identity as that instance, and nodemedic's EC2 calls reach it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from moto.ec2.models import instances as models_instances

from world.aws.instances import chosen_instance_ids, distinct_private_ips, launch_as

CHOSEN = "i-0a1b2c3d4e5f60718"


def _launch(ec2: object) -> None:
    launch_as(
        ec2,
        CHOSEN,
        zone="us-east-1a",
        instance_type="p5.48xlarge",
        tags={"karpenter.sh/nodepool": "gpu"},
    )


def test_the_instance_has_the_chosen_id_zone_and_tags() -> None:
    with mock_aws(), chosen_instance_ids():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        _launch(ec2)
        (reservation,) = ec2.describe_instances(InstanceIds=[CHOSEN])["Reservations"]
        (instance,) = reservation["Instances"]
        other = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=1, MaxCount=1)
    assert instance["Placement"]["AvailabilityZone"] == "us-east-1a"
    assert {"Key": "karpenter.sh/nodepool", "Value": "gpu"} in instance["Tags"]
    assert other["Instances"][0]["InstanceId"] != CHOSEN, "only launch_as's call takes it"


def test_without_chosen_ids_a_launch_is_refused_rather_than_given_another_id() -> None:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        with pytest.raises(RuntimeError, match=f"in place of {CHOSEN}"):
            _launch(ec2)


def test_no_two_instances_get_one_private_address_the_node_is_named_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn = iter(["10.1.2.3", "10.1.2.3", "10.1.2.3", "10.4.5.6"])
    monkeypatch.setattr(models_instances, "random_private_ip", lambda *_: next(drawn))
    with mock_aws(), distinct_private_ips():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        made = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=2, MaxCount=2)
    names = [i["PrivateDnsName"] for i in made["Instances"]]
    assert sorted(names) == ["ip-10-1-2-3.ec2.internal", "ip-10-4-5-6.ec2.internal"]
