"""Fewer devices than the node should have: the count check every device family shares.

The check names are the contract's (``nodemedic.contracts.health``); the catalog's health
rules match them, so a count taken from ``neuron-ls`` or ``fi_info`` is judged by the same
rule as one taken from sysfs.
"""

from __future__ import annotations

from nodemedic.health.result import Figure, Result


def missing_devices(
    check: str, expected: int, found: int, ts: str, reason: str = "DeviceMissing"
) -> list[Result]:
    """One node-wide ``fail`` when fewer than ``expected`` devices were found; none when
    nothing is expected (0) or all are there."""
    if not expected or found >= expected:
        return []
    figures: dict[str, Figure] = {"expected": expected, "found": found}
    return [Result(check, "node", "fail", reason, figures, ts)]
