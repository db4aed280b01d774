"""The whole local world: moto server with the synthesized stack, the real kube-apiserver,
simulated kubelets, one agent process per node (``nodemedic.local.world``).

One world serves the session: the default scenario leaves every node healthy again (the
replaced one has a successor), so the storm runs on it next; the storm's checks look only
at what its own faults caused. The scenarios are the demo's own; the tests then read the
final state through the APIs themselves (Kubernetes, Auto Scaling, EC2, SQS, CloudWatch,
DynamoDB)."""

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
