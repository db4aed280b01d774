"""The local world of each e2e module (see ``tests.support.e2e``): one per module, since the
breaker counts replacements per clock hour, and a scenario run before would count against
the next. A module whose scenario has its own cluster settings names them in
``WORLD_SETTINGS``, and its world's options (``scenarios.WORLDS``) in ``WORLD_OPTIONS``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from world.start import local_world
from world.world import World


@pytest.fixture(scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    workdir: Path = tmp_path_factory.mktemp("world")
    with local_world(
        workdir,
        settings=getattr(request.module, "WORLD_SETTINGS", None),
        **getattr(request.module, "WORLD_OPTIONS", {}),
    ) as running:
        yield running
