"""moto's server finds each host's backend once: every request waits on the lock it finds
the backend under, so a request must not list moto's package folder there."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from moto import backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

from world.aws.motoserver import backends_remembered


def test_a_hosts_backend_is_found_once_and_is_moto_s_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed: list[int] = []
    own_listing = backends.list_of_moto_modules

    def listing() -> Iterable[str]:
        listed.append(1)
        return own_listing()

    monkeypatch.setattr(backends, "list_of_moto_modules", listing)
    dispatcher = DomainDispatcherApplication(create_app=lambda backend: None)  # type: ignore[arg-type,return-value]
    hosts = ("logs.us-east-1.amazonaws.com", "dynamodb.us-east-1.amazonaws.com")
    own = [dispatcher.get_backend_for_host(host) for host in hosts]
    listed.clear()

    with backends_remembered():
        found = [dispatcher.get_backend_for_host(h) for h in hosts * 50]

    assert found == own * 50 and own == ["logs", "dynamodb"]
    assert len(listed) == len(hosts)
