"""What the CLI's cluster commands share: a cluster's stack outputs, the AWS options."""

from __future__ import annotations

import argparse
from typing import Any

from nodemedic.contracts.stack import stack_name


class ClusterNotFound(LookupError):
    """No nodemedic stack for the cluster in this account and region."""


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, help="the cluster's name in cdk.json")
    parser.add_argument("--region", help="AWS region (default: the SDK's)")
    parser.add_argument("--profile", help="AWS profile (default: the SDK's)")
    parser.add_argument("--endpoint-url", help="another AWS endpoint (a local moto server)")


def session(args: argparse.Namespace) -> Any:
    import boto3

    return boto3.Session(region_name=args.region, profile_name=args.profile)


def stack_output(cloudformation: Any, cluster: str, key: str) -> str:
    """Output ``key`` of ``cluster``'s stack; a clear error when there is no such stack."""
    from botocore.exceptions import ClientError

    try:
        (stack,) = cloudformation.describe_stacks(StackName=stack_name(cluster))["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            raise ClusterNotFound(
                f"cluster {cluster!r} not found: no stack {stack_name(cluster)} "
                "in this account and region"
            ) from exc
        raise
    for output in stack.get("Outputs", []):
        if output["OutputKey"] == key:
            return str(output["OutputValue"])
    raise LookupError(f"stack {stack_name(cluster)} has no output {key}")
