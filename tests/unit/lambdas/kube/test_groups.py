"""The kube Lambda's ``group_size`` op: a node group's size, and no group for one gone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
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
