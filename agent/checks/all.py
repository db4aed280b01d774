"""Every health check the agent knows, one entry each, in order (as GPUd's
``components/all``): the order of ``--checks``' default, of their options in ``--help`` and
of the result lines. A check module that is not listed here is not run.
"""

from __future__ import annotations

from typing import Any

from agent.checks import efa, neuron, neuron_monitor, nvidia
from agent.checks.registry import Option, Registration

CHECKS: tuple[Registration, ...] = (
    nvidia.REGISTRATION,
    neuron.REGISTRATION,
    efa.REGISTRATION,
    neuron_monitor.REGISTRATION,
)


def registered() -> tuple[Registration, ...]:
    return CHECKS


def names() -> tuple[str, ...]:
    """What ``--checks`` takes."""
    return tuple(check.name for check in CHECKS)


def options() -> tuple[Option[Any], ...]:
    """Every check's options, in the list's order."""
    return tuple(option for check in CHECKS for option in check.options)
