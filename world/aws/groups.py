"""Auto Scaling's ``DescribeAutoScalingGroups`` with ``IncludeInstances`` false, which moto
ignores: AWS then leaves each group's ``Instances`` out (botocore's model, autoscaling
2011-01-01, ``AutoScalingGroupNamesType``). nodemedic's ``group_size`` asks for a group's
size only, and a 1,500-instance group's answer with its instances is some 475 KB of XML for
moto to build and the kube Lambda to parse, at every remediation's intake.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any, cast

from moto.core.responses import ActionResult

from world.aws.motopatch import DESCRIBE_GROUPS, replaced


@contextlib.contextmanager
def instances_left_out() -> Iterator[None]:
    """While active, a describe that sets ``IncludeInstances`` false lists no instances."""
    describe = DESCRIBE_GROUPS.current()

    def describe_auto_scaling_groups(self: Any) -> ActionResult:
        answer: ActionResult = describe(self)
        if self._get_bool_param("IncludeInstances", True):
            return answer
        result = dict(cast(dict[str, Any], answer.result))
        result["AutoScalingGroups"] = [_without_instances(g) for g in result["AutoScalingGroups"]]
        return ActionResult(result)

    with replaced({DESCRIBE_GROUPS: describe_auto_scaling_groups}):
        yield


def _without_instances(group: Any) -> Any:
    """A copy of ``group`` for the answer only: its instances stay in the backend."""
    answered = copy.copy(group)
    answered.instance_states = []
    return answered
