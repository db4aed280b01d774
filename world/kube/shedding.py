"""The API server shedding one user's load, as its priority and fairness does when that
user's flow is over its share: a priority level with no seats of its own, none to borrow,
and ``Reject`` for what does not fit. The real kube-apiserver then answers the user's
requests one at a time and every one beyond with HTTP 429 (``Too many requests, please try
again later``, with ``Retry-After``), however many it sends at once.

Public interface: ``shedding(admin, user)`` (context manager).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from kubernetes import client

IN_FORCE_SECONDS = 60.0
"""The apiserver takes up a new flow schema within a second on an idle machine; this bounds a
broken run."""


@contextlib.contextmanager
def shedding(admin: client.ApiClient, user: str) -> Iterator[None]:
    """In force for ``user``'s requests until the block ends."""
    flows = client.FlowcontrolApiserverV1Api(admin)
    name = f"shed-{user}"
    flows.create_priority_level_configuration(
        {
            "metadata": {"name": name},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        }
    )
    flows.create_flow_schema(
        {
            "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": name},
                "matchingPrecedence": 100,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": user}}],
                        "resourceRules": [
                            {
                                "verbs": ["*"],
                                "apiGroups": ["*"],
                                "resources": ["*"],
                                "clusterScope": True,
                                "namespaces": ["*"],
                            }
                        ],
                    }
                ],
            },
        }
    )
    try:
        _in_force(flows, name)
        yield
    finally:
        flows.delete_flow_schema(name)
        flows.delete_priority_level_configuration(name)


def _in_force(flows: client.FlowcontrolApiserverV1Api, name: str) -> None:
    """Once the apiserver's configuration controller has judged the schema: it says so in
    the schema's ``Dangling`` condition, false once its priority level is known."""
    deadline = time.monotonic() + IN_FORCE_SECONDS
    while True:
        conditions = flows.read_flow_schema_status(name).status.conditions or []
        if any(c.type == "Dangling" and c.status == "False" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the flow schema {name} was not taken up in {IN_FORCE_SECONDS}s")
        time.sleep(0.1)
