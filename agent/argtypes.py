"""Argument types shared by the agent's command line and the health checks' own options."""

from __future__ import annotations

import argparse
import re

_METRIC_NAME_START = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def seconds(text: str) -> float:
    """A duration in seconds, not negative."""
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def count(text: str) -> int:
    """A whole number, not negative."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def on_off(text: str) -> bool:
    """``on`` or ``off``, for a switch whose default is on (``store_true`` cannot turn it off)."""
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"must be on or off: {text}")
    return text == "on"


def metric_prefix(text: str) -> str:
    """Empty, or what a Prometheus metric name may begin with (``nodemedic_``)."""
    if text and not _METRIC_NAME_START.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not the start of a Prometheus metric name: {text}")
    return text


# argparse quotes a type's name in its errors ("invalid _count value: 'x'"); these are the
# names ``nodemedic agent`` has always printed there.
seconds.__name__ = "_seconds"
count.__name__ = "_count"
