"""One botocore data loader for every session a test process makes.

moto's ``mock_aws`` starts each test with a fresh boto3 default session, and each botocore
session reads its endpoints and service models from disk again (the endpoints file alone is
a megabyte of JSON): a fifth of the unit tier's time went to reading the same files. A
single long-lived session shares its loader's parsed models between all its clients; this
shares one loader between the sessions too, which changes nothing else of a session (its
credentials, region and configuration are still its own).
"""

from __future__ import annotations

from functools import cache

import botocore.session
from botocore.loaders import Loader, create_loader


@cache
def shared_loader(search_path: str | None = None) -> Loader:
    """The one loader of ``search_path`` (``AWS_DATA_PATH``), made on first use."""
    return create_loader(search_path)


def share_loader() -> None:
    """Every botocore session made from now on in this process reads models through
    ``shared_loader``."""
    botocore.session.create_loader = shared_loader
