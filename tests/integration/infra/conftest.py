"""The synthesized templates the infrastructure tests read (each synthesized once)."""

from __future__ import annotations

import pytest

from stacks.synth import synth_template
from tests.support.templates import SETTINGS, Template


@pytest.fixture(scope="session")
def template() -> Template:
    return synth_template(SETTINGS)
