"""``nvidia-smi -q -x``: the XML report the agent's nvidia-smi check reads."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from nodemedic.health import nvidia_smi
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Result

NAME = "nvidia-smi-xml"


def recognise(text: str) -> bool:
    return "<nvidia_smi_log" in text[:4096]


def evaluate(text: str, expected: Devices | None, ts: str) -> list[Result]:
    try:
        return nvidia_smi.evaluate(text.encode(), expected.gpus if expected else 0, ts)
    except ET.ParseError as exc:
        raise ValueError(f"nvidia-smi XML that does not parse: {exc}") from None
