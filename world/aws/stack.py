"""Create in moto the resources a synthesized CloudFormation template defines.

The local world deploys the very template ``cdk synth`` produces (``stacks.synth.
synth_template``: the whole PipelineStack): KMS keys, IAM roles and policies, tables,
topics and their policies, queues, log groups and subscription filters, Lambda functions
(a placeholder zip: the code runs in-process, see ``inprocess.py``) and their
permissions, alarms, the dashboard, EventBridge rules (held, never fired), and the state
machines with their definitions' ``Fn::Join``/``Ref``/``Fn::GetAtt``/``Fn::Sub`` resolved
against the moto resources, then the stack's outputs, which a stack of that name holds in
moto's CloudFormation, where the CLI finds a cluster's resources (``--cluster``). One
creator per resource type (``resources.py``); a type moto cannot hold is skipped only with
a reason (``resources.SKIPPED``); any other unknown type, and any intrinsic function
``cloudformation.py`` does not know, is an error, not a silently wrong value.

``node_group`` adds what the stack does not create but acts on: an Auto Scaling group of
instances. Where moto behaves otherwise than AWS in a way nodemedic depends on, the world
changes it (``motopatch.py`` names every change).

Public interface (used by the tests and the local demo):

- ``deploy(template, *, stack_name, region, endpoint_url) -> Deployment``
- ``Deployment.find(type, prefix)``, ``.of_type(type)``, ``.outputs``, ``.skipped``
  (``cloudformation.py``)
- ``resource_count(deployment)``: the template's count as the demo says it
- ``node_group(name, size, *, region, endpoint_url, instance_type, availability_zone)``
- ``QUICK_EC2``: environment for moto that skips loading its AMI catalog
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import cache
from typing import Any

import boto3

from world.aws.cloudformation import (
    Deployment,
    Resolver,
    Resource,
    TemplateError,
    creation_order,
)
from world.aws.resources import CREATORS, SKIPPED, Client

QUICK_EC2 = {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false"}
IMAGE_ID = "ami-0a1b2c3d4e5f60718"
"""The world's machines' image: moto validates none; a real node's is the EKS accelerated AMI."""
"""Environment for moto (set before its EC2 backend starts): skip loading the catalog of
public AMIs, seconds per fresh backend; ``node_group`` needs none of them."""
DEFAULT_AZ = "us-east-1a"


def deploy(
    template: Mapping[str, Any],
    *,
    stack_name: str = "nodemedic",
    region: str = "us-east-1",
    endpoint_url: str | None = None,
) -> Deployment:
    """Create the template's resources in moto (in-process ``mock_aws`` or a moto server at
    ``endpoint_url``), dependencies first, then resolve its outputs.

    Physical names are ``<stack_name>-<logical id>`` where the template gives none, so two
    stacks (two clusters) can live in one moto world.
    """
    client = _clients(region, endpoint_url)
    account = client("sts").get_caller_identity()["Account"]
    deployment = Deployment(stack_name=stack_name, region=region, account=account)
    resources: dict[str, Any] = dict(template.get("Resources", {}))
    unknown = {
        r["Type"] for r in resources.values() if r["Type"] not in CREATORS.keys() | SKIPPED.keys()
    }
    if unknown:
        raise TemplateError(f"resource types the local world cannot create: {sorted(unknown)}")
    resolver = Resolver(template, deployment)
    for lid in creation_order(resources):
        type_ = resources[lid]["Type"]
        creator = CREATORS.get(type_)
        if creator is None:
            deployment.skipped[lid] = SKIPPED[type_]
            continue
        props = resolver.resolve(resources[lid].get("Properties", {}))
        ref, attributes = creator(client, deployment, lid, props)
        deployment.resources[lid] = Resource(lid, type_, ref, attributes)
    deployment.outputs = {
        name: str(resolver.resolve(output["Value"]))
        for name, output in template.get("Outputs", {}).items()
    }
    _hold_outputs(client("cloudformation"), stack_name, deployment.outputs)
    return deployment


def _hold_outputs(cloudformation: Any, stack_name: str, outputs: Mapping[str, str]) -> None:
    """A stack with no resources of its own (they are created above, one by one) and the
    template's outputs, resolved: what ``nodemedic approve --cluster`` and the other cluster
    commands read (``console.cli.stack.stack_output``)."""
    held = {name: {"Value": value} for name, value in outputs.items()}
    cloudformation.create_stack(
        StackName=stack_name, TemplateBody=json.dumps({"Resources": {}, "Outputs": held})
    )


def _clients(region: str, endpoint_url: str | None) -> Client:
    @cache  # one client per service for the whole deployment, not one per resource
    def client(service: str) -> Any:
        return boto3.client(service, region_name=region, endpoint_url=endpoint_url)

    return client


def node_group(
    name: str,
    size: int,
    *,
    region: str = "us-east-1",
    endpoint_url: str | None = None,
    instance_type: str = "trn1.32xlarge",
    availability_zone: str = DEFAULT_AZ,
) -> list[str]:
    """An Auto Scaling group of ``size`` running instances, as an EKS managed node group
    is; their instance ids, sorted. Each instance carries the ``aws:autoscaling:groupName``
    tag the remediation role's reboot guardrail reads."""
    client = _clients(region, endpoint_url)
    template = f"{name}-nodes"
    client("ec2").create_launch_template(
        LaunchTemplateName=template,
        LaunchTemplateData={"ImageId": IMAGE_ID, "InstanceType": instance_type},
    )
    autoscaling = client("autoscaling")
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": template},
        MinSize=size,
        MaxSize=size,
        DesiredCapacity=size,
        AvailabilityZones=[availability_zone],
    )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])
    return sorted(i["InstanceId"] for i in group["AutoScalingGroups"][0]["Instances"])


def scheduled_event() -> dict[str, Any]:
    """What EventBridge sends a rate schedule's target: the rules are held, so the
    scenarios start the targets with it as the rules would."""
    return {
        "version": "0",
        "id": "nodemedic-demo",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "resources": [],
        "detail": {},
    }


def resource_count(deployment: Deployment) -> str:
    """``148 resources``, or ``145 of the template's 148 resources (3 not needed here: ...)``:
    the count the demo shows is the template's, and what the world left out is said."""
    made, skipped = len(deployment.resources), len(deployment.skipped)
    if not skipped:
        return f"{made} resources"
    reasons = set(deployment.skipped.values())
    kinds = sorted(kind for kind, reason in SKIPPED.items() if reason in reasons)
    return (
        f"{made} of the template's {made + skipped} resources ({skipped} the world does without: "
        f"{', '.join(kinds)})"
    )
