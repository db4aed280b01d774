"""``neuron-ls``: the Neuron devices the driver lists, as its table or as ``-j`` JSON.

It shows no error counters, only which devices are there; fewer than the instance type has
is the agent's ``DeviceMissing``. The instance type comes from the dump where ``neuron-ls``
prints it (``instance-type:``, or ``instance_type`` in the JSON), else from ``--instance-type``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nodemedic.contracts.health import NEURON_SYSFS_CHECK
from nodemedic.health.devices import missing_devices
from nodemedic.health.instance_types import Devices, devices_of
from nodemedic.health.result import Result

NAME = "neuron-ls"
_HEADER = re.compile(r"^\|\s*NEURON\s*\|\s*NEURON\s*\|", re.MULTILINE)
_OLD_HEADER = re.compile(r"^\|\s*PCI BDF\s*\|\s*LOGICAL\s*\|\s*NEURON\s*\|", re.MULTILINE)
_DEVICE_ROW = re.compile(r"^\|\s*(\d+)\s*\|")
_OLD_DEVICE_ROW = re.compile(r"^\|\s*[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d\s*\|\s*(\d+)\s*\|")
_INSTANCE_TYPE = re.compile(r"^instance-type:\s*(\S+)", re.MULTILINE)


def recognise(text: str) -> bool:
    if _HEADER.search(text) or _OLD_HEADER.search(text):
        return True
    return text.lstrip().startswith("[") and '"neuron_device"' in text[:4096]


def _devices(text: str) -> tuple[list[str], str]:
    """(device ids, the instance type the dump names or "")."""
    if text.lstrip().startswith("["):
        listed: list[dict[str, Any]] = json.loads(text)
        named = {str(d.get("instance_type", "")) for d in listed} - {""}
        return [str(d["neuron_device"]) for d in listed], next(iter(named), "")
    row = _OLD_DEVICE_ROW if _OLD_HEADER.search(text) else _DEVICE_ROW
    ids = [found[1] for line in text.splitlines() if (found := row.match(line))]
    named_type = _INSTANCE_TYPE.search(text)
    return list(dict.fromkeys(ids)), named_type[1] if named_type else ""


def evaluate(text: str, expected: Devices | None, ts: str) -> list[Result]:
    try:
        ids, instance_type = _devices(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"neuron-ls output that cannot be read: {exc}") from None
    if instance_type:
        expected = devices_of(instance_type) or expected
    wanted = expected.neuron_devices if expected else 0
    healthy = [Result(NEURON_SYSFS_CHECK, f"neuron{i}", "ok", "Healthy", {}, ts) for i in ids]
    return missing_devices(NEURON_SYSFS_CHECK, wanted, len(ids), ts) + healthy
