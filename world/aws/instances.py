"""EC2 instances whose ids someone else chose: the instances behind the Nodes the real
Karpenter controller's KWOK provider creates (build revision 2,
``world/kube/karpenter-kwok-aws-provider-id.patch``). Each such Node's provider ID names an
instance, ``aws:///<zone>/i-<17 hex>``, drawn by the provider, not by EC2; the world plays the
cloud behind it and runs that very instance in moto, so that the Node's agent proves its
identity as the instance and nodemedic's EC2 calls reach it.

moto draws every instance id itself (``random_instance_id``); while ``chosen_instance_ids``
is active, the one ``launch_as`` asks for is drawn instead, for its call only.

An instance's private address names its Node (``ip-10-1-2-3.ec2.internal``), and moto draws
it at random from 10.0.0.0/8 with no check that another instance has it: at 1,500 instances
two share one in about one world of fifteen, and the second Node cannot register. While
``distinct_private_ips`` is active, a drawn address already given is drawn again, as EC2
never gives one address twice in a VPC.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from world.aws.motopatch import RANDOM_INSTANCE_ID, RANDOM_PRIVATE_IP, replaced
from world.aws.stack import IMAGE_ID

_lock = threading.Lock()
_wanted: list[str] = []
"""The id the next instance moto makes takes, while ``launch_as`` runs (one at a time)."""


@contextlib.contextmanager
def chosen_instance_ids() -> Iterator[None]:
    """While active, ``launch_as`` runs an instance with the id it is given."""
    draw = RANDOM_INSTANCE_ID.current()

    def random_instance_id() -> str:
        return _wanted.pop() if _wanted else str(draw())

    with replaced({RANDOM_INSTANCE_ID: random_instance_id}):
        yield


@contextlib.contextmanager
def distinct_private_ips() -> Iterator[None]:
    """While active, no two instances moto launches get one private address."""
    draw = RANDOM_PRIVATE_IP.current()
    given: set[str] = set()
    guard = threading.Lock()

    def random_private_ip(cidr: str | None = None, ipv6: bool = False) -> str:
        with guard:
            address = str(draw(cidr, ipv6))
            while address in given:
                address = str(draw(cidr, ipv6))
            given.add(address)
            return address

    with replaced({RANDOM_PRIVATE_IP: random_private_ip}):
        yield


def launch_as(
    ec2: Any, instance_id: str, *, zone: str, instance_type: str, tags: Mapping[str, str]
) -> None:
    """Run the instance ``instance_id`` in ``zone``, tagged as its launcher tags it. An
    instance another caller launched meanwhile could take the id: then this fails, naming
    both, rather than give a Node an instance that is not its own."""
    with _lock:
        _wanted[:] = [instance_id]
        try:
            (made,) = ec2.run_instances(
                ImageId=IMAGE_ID,
                InstanceType=instance_type,
                MinCount=1,
                MaxCount=1,
                Placement={"AvailabilityZone": zone},
                TagSpecifications=[
                    {
                        "ResourceType": "instance",
                        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                    }
                ],
            )["Instances"]
        finally:
            _wanted.clear()
    if made["InstanceId"] != instance_id:
        raise RuntimeError(f"launched {made['InstanceId']} in place of {instance_id}")
