"""The agent's botocore session: botocore alone, without boto3 or the whole endpoint table.

The agent makes three CloudWatch Logs calls and one KMS call a boot; what a stock session
loads for them stays in its memory for the life of the node, measured (``bench/agent.py``):

- boto3 brings its resource layer and s3transfer (with multiprocessing and
  concurrent.futures) that the agent never uses: about 4 MB;
- botocore's legacy endpoint table (``endpoints.json``, 1.2 MB of JSON naming every
  service's endpoints in every Region) is parsed whole to build any client and kept by the
  session: about 9 MB of RSS, even once released, since the freed objects leave the heap
  fragmented.

Each service's endpoint rule set (``endpoint-rule-set-1.json``, with ``partitions.json``)
is what resolves a client's URL and signing Region; the table only says which partition a
Region belongs to. The partitions file (7 KB) says that too, so the table here is built
from it, with every partition's Regions and no services (an ``endpoints.json`` of one's
own on ``AWS_DATA_PATH`` is not read: ``--endpoint-url`` names another endpoint).
"""

from __future__ import annotations

from typing import Any

from botocore.loaders import Loader
from botocore.session import Session

_HOSTNAME = "{service}.{region}.{dnsSuffix}"
_FIPS_HOSTNAME = "{service}-fips.{region}.{dnsSuffix}"


def _defaults(outputs: dict[str, Any]) -> dict[str, Any]:
    """A partition's endpoint defaults, FIPS and dual-stack variants included (botocore
    refuses a variant its table lacks before the rule set is asked)."""
    dual = outputs["dualStackDnsSuffix"]
    return {
        "hostname": _HOSTNAME,
        "protocols": ["https"],
        "signatureVersions": ["v4"],
        "variants": [
            {"dnsSuffix": outputs["dnsSuffix"], "hostname": _FIPS_HOSTNAME, "tags": ["fips"]},
            {"dnsSuffix": dual, "hostname": _FIPS_HOSTNAME, "tags": ["dualstack", "fips"]},
            {"dnsSuffix": dual, "hostname": _HOSTNAME, "tags": ["dualstack"]},
        ],
    }


def endpoint_table(partitions: dict[str, Any]) -> dict[str, Any]:
    """``endpoints.json``'s shape from ``partitions.json``: each partition's DNS suffix,
    Region pattern and Regions, no services."""
    return {
        "version": 3,
        "partitions": [
            {
                "partition": partition["id"],
                "dnsSuffix": partition["outputs"]["dnsSuffix"],
                "regionRegex": partition["regionRegex"],
                "regions": partition["regions"],
                "services": {},
                "defaults": _defaults(partition["outputs"]),
            }
            for partition in partitions["partitions"]
        ],
    }


class _PartitionsLoader(Loader):  # type: ignore[misc]  # botocore is untyped
    """botocore's loader, except that the endpoint table comes from the partitions file."""

    def load_data_with_path(self, name: str) -> tuple[Any, str]:
        if name == "endpoints":
            partitions, path = super().load_data_with_path("partitions")
            return endpoint_table(partitions), path
        found: tuple[Any, str] = super().load_data_with_path(name)
        return found


def session() -> Session:
    """A botocore session (credentials, config files and environment as usual) whose
    clients are built without the endpoint table; models are searched where botocore
    searches them (``AWS_DATA_PATH`` first)."""
    lean = Session()
    stock = lean.get_component("data_loader")
    lean.register_component(
        "data_loader",
        _PartitionsLoader(
            extra_search_paths=stock.search_paths, include_default_search_paths=False
        ),
    )
    return lean
