"""Log groups with the cluster's retention (CloudWatch accepts a fixed set of day counts)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct


def log_group(
    scope: Construct, id: str, *, retention_days: int, name: str | None = None
) -> logs.LogGroup:
    """A log group deleted with the stack: a retained group with a fixed name would make
    the next deploy of the same cluster fail."""
    group = logs.LogGroup(scope, id, log_group_name=name, removal_policy=RemovalPolicy.DESTROY)
    cfn = group.node.default_child
    assert isinstance(cfn, logs.CfnLogGroup)
    # The settings hold a plain number of days; the L2 property only takes its enum.
    cfn.retention_in_days = retention_days
    return group
