"""The Node of an instance is found on any page of a paged listing, and the cluster's Nodes
are all counted, on the real kube-apiserver."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from lambdas.kube import listing
from tests.support.kube import Node

pytestmark = pytest.mark.kube


def test_a_node_on_a_later_page_is_found_and_every_node_counted(
    core: client.CoreV1Api, new_node: Callable[..., Node], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [new_node() for _ in range(5)]
    everyone = len(core.list_node().items)
    monkeypatch.setattr(listing, "_PAGE", 2)

    for wanted in made:
        found, counted = listing.scan(core, wanted.instance_id, count=True)
        assert found is not None and found.metadata.name == wanted.name
        assert found.spec.provider_id.endswith(wanted.instance_id)  # the client's model
        assert counted == everyone
        alone = listing.find_node(core, wanted.instance_id)
        assert alone is not None and alone.metadata.name == wanted.name
    assert listing.scan(core, "i-0000000000000dead", count=True) == (None, everyone)
