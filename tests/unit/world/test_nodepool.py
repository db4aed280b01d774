"""The instance a Karpenter Node's provider ID names (``world.nodepool.instance_of``): the
patched KWOK provider's ``aws:///<zone>/<instance id>``; upstream's ``kwok://`` is refused."""

from __future__ import annotations

import pytest

from world.nodepool import instance_of


def test_the_zone_and_instance_of_an_aws_provider_id() -> None:
    assert instance_of("aws:///us-east-1a/i-0123456789abcdef0") == (
        "us-east-1a",
        "i-0123456789abcdef0",
    )


@pytest.mark.parametrize("provider_id", ["kwok://kwok-gpu-abc-1", "aws:///us-east-1a/", ""])
def test_a_provider_id_naming_no_instance_is_refused(provider_id: str) -> None:
    with pytest.raises(ValueError, match="names no EC2 instance"):
        instance_of(provider_id)
