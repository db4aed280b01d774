"""Dumps an engineer copies off a node, recognised by their content and judged as the agent would.

Each format is one module with ``NAME`` (the format's, which triage prints; the lines'
checks are the contract's, ``nodemedic.contracts.health``), ``recognise(text) -> bool`` and
``evaluate(text, expected, ts) -> list[Result]`` (``ValueError``: a dump of its format
that cannot be read); the results are the agent's health result
lines, so the catalog's health rules give them their faults. ``expected`` is what the
node's instance type has (``nodemedic.health.instance_types``), where known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nodemedic.dumps import dcgmi, fi_info, neuron_ls, nvidia_text, nvidia_xml
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Result


@dataclass(frozen=True)
class DumpFormat:
    name: str
    recognise: Callable[[str], bool]
    evaluate: Callable[[str, Devices | None, str], list[Result]]


FORMATS = tuple(
    DumpFormat(module.NAME, module.recognise, module.evaluate)
    for module in (nvidia_xml, nvidia_text, dcgmi, neuron_ls, fi_info)
)


def dump_format(text: str) -> DumpFormat | None:
    """The format ``text`` is in, by its content; None for none of the dump formats."""
    return next((found for found in FORMATS if found.recognise(text)), None)
