"""The kube tier's order: modules that run a controller ``make test`` builds beside the tier
(Karpenter, KWOK) go last.

``make test`` starts the kube tier as soon as Kubernetes is built and builds those
controllers while it runs, to keep a cold CI within its bar. A test that asks for a
controller still being built waits on its build script's lock, which holds its worker idle;
at the end of the queue the build is done long before the test comes up."""

from __future__ import annotations

from collections import Counter
from typing import Final

import pytest

MARKER: Final = "controllers"
"""Registered in pyproject.toml's pytest markers."""


def controllers_last(items: list[pytest.Item]) -> None:
    """Before them, modules with more tests first, as pytest-xdist's ``--dist loadfile`` orders
    its queue by default: that order is turned off (``--no-loadscope-reorder``) so this one
    holds, and the unmarked modules keep the order the tier has always run them in. Stable,
    so each module stays whole. A run with no marked test keeps its order."""
    marked = {item.nodeid: item.get_closest_marker(MARKER) is not None for item in items}
    if not any(marked.values()):
        return
    tests = Counter(item.nodeid.split("::")[0] for item in items)
    items.sort(key=lambda item: (marked[item.nodeid], -tests[item.nodeid.split("::")[0]]))
