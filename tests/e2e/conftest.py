"""The one local world the e2e tests share (see ``tests.support.e2e``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodemedic.local.world import World, local_world


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    workdir: Path = tmp_path_factory.mktemp("world")
    with local_world(workdir) as running:
        yield running
