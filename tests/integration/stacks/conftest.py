"""The synthesized templates the infrastructure tests read (each synthesized once)."""

from __future__ import annotations

import pytest

from nodemedic.settings import ClusterSettings
from stacks.synth import synth_template
from tests.support.templates import SETTINGS, Template


@pytest.fixture(scope="session")
def template() -> Template:
    return synth_template(SETTINGS)


@pytest.fixture(scope="session")
def plain_template() -> Template:
    """A cluster with every setting at its default (job monitoring off)."""
    return synth_template(ClusterSettings(name="plain"))
