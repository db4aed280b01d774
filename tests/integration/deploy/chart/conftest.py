"""The chart's tests share one helm and one render of the defaults per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.helm import render
from world.kube.chart import helm_binary


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


@pytest.fixture(scope="module")
def default(helm: Path) -> str:
    """The chart as it renders with only the values it has no default for."""
    return render(helm)
