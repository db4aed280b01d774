"""The remediation tests' session: quick EC2 in moto and the acting cluster's template
(see ``tests.support.remediation``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodemedic.local.aws import QUICK_EC2
from tests.support.remediation import acting_template


@pytest.fixture(scope="session", autouse=True)
def quick_ec2() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in QUICK_EC2.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def default_template() -> dict[str, Any]:
    return acting_template()
