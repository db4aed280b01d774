"""A node's Karpenter NodeClaim: find it, delete it so Karpenter replaces the instance, and
see it gone (``NODECLAIM_OF_OP``, ``DELETE_NODECLAIM_OP``, ``NODECLAIM_GONE_OP`` in
``nodemedic.contracts.substrates``).

Deleting a NodeClaim is how Karpenter is asked to replace a node: its termination finalizer
drains the Node, terminates the instance and deletes the Node, and the pods left pending get
a new NodeClaim. A NodeClaim is found only through what Karpenter itself writes:
``status.nodeName`` names the Node, and ``status.providerID`` must name the same instance as
the Node's ``spec.providerID``. Never through a label: a node's labels can be set by whoever
may patch it (and ``karpenter.sh/nodepool`` is copied onto the Node), so a label could point
nodemedic at another node's NodeClaim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubernetes import client

from nodemedic.contracts.substrates import (
    KARPENTER_GROUP,
    NODECLAIM_PLURAL,
    NODECLAIM_VERSION,
    NODEPOOL_LABEL,
)

_PAGE = 500
_NONE = {"nodeclaim": "", "nodepool": "", "nodeclass_group": "", "provider_id": ""}


def nodeclaim_of(core: client.CoreV1Api, node: str) -> dict[str, str]:
    """``{nodeclaim, nodepool, nodeclass_group, provider_id}`` of the one NodeClaim that
    names ``node`` and its instance; every field ``""`` when there is none: the Node is gone
    or has no provider id, no NodeClaim names it, or the one that does names another
    instance (a Node recreated under the same name), or more than one does (nothing to act
    on with confidence)."""
    provider_id = _provider_id(core, node)
    if not provider_id:
        return dict(_NONE)
    custom = client.CustomObjectsApi(core.api_client)
    naming = [c for c in _each_nodeclaim(custom) if _status(c).get("nodeName") == node]
    if len(naming) != 1 or _status(naming[0]).get("providerID") != provider_id:
        return dict(_NONE)
    (claim,) = naming
    return {
        "nodeclaim": claim["metadata"]["name"],
        "nodepool": (claim["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, ""),
        "nodeclass_group": (claim.get("spec", {}).get("nodeClassRef") or {}).get("group", ""),
        "provider_id": provider_id,
    }


def delete_nodeclaim(core: client.CoreV1Api, node: str, nodeclaim: str) -> bool:
    """True when the NodeClaim ``nodeclaim`` names ``node`` and is deleted (by this call or
    an earlier one: the state machine may repeat it); False when it is gone or names
    another node, and nothing is deleted. The delete is conditional on the NodeClaim's uid
    and resource version as read, so a NodeClaim that changed in between is read again."""
    custom = client.CustomObjectsApi(core.api_client)
    while True:
        claim = _read(custom, nodeclaim)
        if claim is None or _status(claim).get("nodeName") != node:
            return False
        if claim["metadata"].get("deletionTimestamp"):
            return True
        meta = claim["metadata"]
        try:
            custom.delete_cluster_custom_object(
                KARPENTER_GROUP,
                NODECLAIM_VERSION,
                NODECLAIM_PLURAL,
                nodeclaim,
                body=client.V1DeleteOptions(
                    preconditions={"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
                ),
            )
        except client.ApiException as exc:
            if exc.status == 409:  # Karpenter wrote to it since: read it again
                continue
            if exc.status == 404:
                return False
            raise
        return True


def nodeclaim_gone(core: client.CoreV1Api, node: str, nodeclaim: str) -> bool:
    """True once neither the NodeClaim nor its Node is in the API: Karpenter removes its
    finalizers only once the instance is terminated and the Node is drained and deleted."""
    custom = client.CustomObjectsApi(core.api_client)
    return _read(custom, nodeclaim) is None and _node(core, node) is None


def _provider_id(core: client.CoreV1Api, node: str) -> str:
    found = _node(core, node)
    return str((found and found.spec and found.spec.provider_id) or "")


def _node(core: client.CoreV1Api, name: str) -> Any | None:
    try:
        return core.read_node(name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _each_nodeclaim(custom: client.CustomObjectsApi) -> Iterator[dict[str, Any]]:
    """Every NodeClaim, a page at a time (one per node: thousands on a large cluster); none
    where the NodeClaim kind is not served."""
    token = None
    while True:
        try:
            page = custom.list_cluster_custom_object(
                KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, limit=_PAGE, _continue=token
            )
        except client.ApiException as exc:
            if exc.status == 404:  # no Karpenter on the cluster: no NodeClaim names any node
                return
            raise
        yield from page.get("items", [])
        token = page.get("metadata", {}).get("continue")
        if not token:
            return


def _read(custom: client.CustomObjectsApi, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = custom.get_cluster_custom_object(
            KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, name
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def _status(claim: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = claim.get("status") or {}
    return status
