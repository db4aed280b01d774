"""Fixtures every tier may ask for: the session's real kube-apiserver and its simulated
kubelets (started only by a test that asks for them); and the kube tier's order
(``tests.support.schedule``)."""

from __future__ import annotations

import pytest

from tests.support.schedule import controllers_last

pytest_plugins = ["tests.support.kube_fixtures", "pytester"]


@pytest.hookimpl(trylast=True)  # after ``-m`` has deselected: the order is of what runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    controllers_last(items)
