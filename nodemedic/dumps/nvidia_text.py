"""``nvidia-smi -q``: the text report, read into the XML report's tree and judged by its rules.

The text is the XML's labels indented: ``ECC Errors`` / ``Volatile`` / ``DRAM Uncorrectable``
is ``ecc_errors/volatile/dram_uncorrectable``. Where the names differ, ``_RENAMED`` says so
(checked against gpud's recordings in tests/events/nvidia-smi-q/ and the XML ones).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from nodemedic.health import nvidia_smi
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Result

NAME = "nvidia-smi-q"
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_LINE = re.compile(r"^(?P<indent> *)(?P<label>[^:]+?)\s*(?::\s*(?P<value>.*?))?\s*$")
_RENAMED = {
    "sram_uncorrectable_sec_ded": "sram_uncorrectable_secded",
    "pending_page_blacklist": "pending_blacklist",
    "pending_page_retirement": "pending_retirement",
    "correctable_error": "remapped_row_corr",
    "uncorrectable_error": "remapped_row_unc",
    "remapping_failure_occurred": "remapped_row_failure",
    "idle": "gpu_idle",
    "display_clock_setting": "display_clocks_setting",
}
_SCOPED = {("remapped_rows", "pending"): "remapped_row_pending"}


def recognise(text: str) -> bool:
    head = text[:8192]
    return "NVSMI LOG" in head or (
        "Attached GPUs" in head and any(_GPU.match(line) for line in head.splitlines())
    )


def _tag(parent: str, label: str) -> str:
    tag = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    return _SCOPED.get((parent, tag)) or _RENAMED.get(tag, tag)


def report_tree(text: str) -> ET.Element:
    """The report as the XML's tree. A line with a value takes no children: what is
    indented under it (``HW Thermal Slowdown`` under ``HW Slowdown``) is its sibling."""
    root = ET.Element("nvidia_smi_log")
    stack: list[tuple[int, ET.Element]] = []
    for line in text.splitlines():
        gpu = _GPU.match(line)
        if gpu:
            stack = [(0, ET.SubElement(root, "gpu", id=gpu[1]))]
            continue
        found = _LINE.match(line)
        if not stack or not found or not found["label"].strip() or not found["indent"]:
            continue
        indent = len(found["indent"])
        while len(stack) > 1 and (stack[-1][0] >= indent or stack[-1][1].text is not None):
            stack.pop()
        parent = stack[-1][1]
        tag = _tag(parent.tag, found["label"])
        if not tag:  # an elision such as "[...]" in a pasted excerpt
            continue
        element = ET.SubElement(parent, tag)
        if found["value"] is not None:
            element.text = found["value"]
        stack.append((indent, element))
    return root


def evaluate(text: str, expected: Devices | None, ts: str) -> list[Result]:
    return nvidia_smi.evaluate_tree(report_tree(text), expected.gpus if expected else 0, ts)
