"""The kube Lambda's ``group_size`` op: a node group's name and desired capacity, nothing
else.

Step Functions orchestrates with native SDK integrations, Lambda only where code is needed;
code is needed here. DescribeAutoScalingGroups lists every instance of a group (~317 bytes
an instance) unless ``IncludeInstances`` is false, a newer parameter of the API that Step
Functions' SDK integration is not documented to pass; and Step Functions checks a task's
raw result against its 256 KiB payload quota before the ResultSelector trims it: from ~830
instances on, a native call fails every remediation with ``States.DataLimitExceeded``. A
Lambda may hold the whole answer (its response quota is 6 MB, and only the numbers leave
it), and it asks without the instances, so a group of thousands answers in a few hundred
bytes.
"""

from __future__ import annotations

from typing import Any

import boto3

from nodemedic.remediate.policy import NO_GROUP


def group_size(name: str, autoscaling: Any = None) -> dict[str, Any]:
    """``{name, size, found}`` as ``$.group`` keeps it; a group gone since the instance was
    found in it is no group (``found`` false), as for an instance in none."""
    autoscaling = autoscaling or boto3.client("autoscaling")
    # One name, so one page: a group's instances are never paged apart from it.
    groups = autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=[name], IncludeInstances=False
    )["AutoScalingGroups"]
    if not groups:
        return {"name": NO_GROUP, "size": 0, "found": False}
    return {
        "name": groups[0]["AutoScalingGroupName"],
        "size": groups[0]["DesiredCapacity"],
        "found": True,
    }
