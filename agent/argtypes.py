"""Argument types shared by the agent's command line and the health checks' own options."""

from __future__ import annotations

import argparse


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


# argparse quotes a type's name in its errors ("invalid _count value: 'x'"); these are the
# names ``nodemedic agent`` has always printed there.
seconds.__name__ = "_seconds"
count.__name__ = "_count"
