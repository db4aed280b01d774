"""``fi_info -p efa``: the EFA devices libfabric can open.

Each EFA device shows as one or more ``domain:`` entries (``rdmap0s31-rdm``,
``efa_0-dgrm``): the device is the name before the endpoint suffix. ``fi_getinfo: -61``
(``-FI_ENODATA``) means libfabric found no EFA device at all. How many the node should have
is not the instance type's to say (its maximum is not what was attached), so the count is
checked against ``--expect-efa-devices``; without it, a node with none is still reported:
whoever ran ``fi_info -p efa`` expected at least one.
"""

from __future__ import annotations

import re

from nodemedic.contracts.health import EFA_CHECK
from nodemedic.health.devices import missing_devices
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Result

NAME = "fi_info"
_PROVIDER = re.compile(r"^\s*provider:\s*efa\b", re.MULTILINE)
_DOMAIN = re.compile(r"^\s*domain:\s*(\S+?)-(?:rdm|dgrm)\s*$", re.MULTILINE)
_NO_DATA = re.compile(r"^fi_getinfo:\s*-61\b", re.MULTILINE)


def recognise(text: str) -> bool:
    return bool(_PROVIDER.search(text) or _NO_DATA.search(text))


def evaluate(text: str, expected: Devices | None, ts: str) -> list[Result]:
    devices = list(dict.fromkeys(_DOMAIN.findall(text)))
    wanted = expected.efa_interfaces if expected and expected.efa_interfaces else 1
    healthy = [Result(EFA_CHECK, device, "ok", "Healthy", {}, ts) for device in devices]
    return missing_devices(EFA_CHECK, wanted, len(devices), ts) + healthy
