"""How many devices a check expects: the flag when given, else the instance type's.

The table is ``nodemedic.health.instance_types``'; a type it does not know gets no
expectation (0, unchecked), said once in the agent's log so an operator knows the count
check is off and which flag turns it on.
"""

from __future__ import annotations

import logging
from functools import cache

from nodemedic.health.instance_types import Devices, devices_of

log = logging.getLogger(__name__)


@cache
def _devices(instance_type: str) -> Devices | None:
    found = devices_of(instance_type) if instance_type else None
    if found is None:
        log.info(
            "instance type %r has no entry in the device table: GPU and Neuron device counts "
            "are unchecked unless --expect-gpus / --expect-neuron-devices say what to expect",
            instance_type or "(unknown)",
        )
    return found


def expected_count(override: int | None, instance_type: str, kind: str) -> int:
    """``override`` when the operator gave one (0 turns the check off), else the count of
    ``kind`` (a ``Devices`` field) the instance type has, else 0."""
    if override is not None:
        return override
    devices = _devices(instance_type)
    return int(getattr(devices, kind)) if devices else 0
