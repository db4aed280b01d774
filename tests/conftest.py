"""Fixtures every tier may ask for: the session's real kube-apiserver and its simulated
kubelets (started only by a test that asks for them); the kube tier's order
(``tests.support.schedule``); and one botocore loader for every session of the process
(``tests.support.botocore_models``)."""

from __future__ import annotations

import pytest

from tests.support.botocore_models import share_loader
from tests.support.schedule import controllers_last

pytest_plugins = ["tests.support.kube_fixtures", "pytester"]


def pytest_configure() -> None:
    share_loader()


@pytest.hookimpl(trylast=True)  # after ``-m`` has deselected: the order is of what runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    controllers_last(items)
