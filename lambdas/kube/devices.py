"""Which pods hold which devices: the Node's device record (``nodemedic.io/pod-devices``,
the kubelet's allocation as the node's agent publishes it), read by a GPU-level rung's
drain and by its search for the jobs to resume."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kubernetes import client

from nodemedic.contracts.kube import POD_DEVICES_KEY


def pods_holding(
    core: client.CoreV1Api, node: str, devices: Sequence[str]
) -> frozenset[str] | None:
    """``<namespace>/<pod>`` of the pods the Node's device record says hold one of
    ``devices``; None (every pod, as a node-level repair drains) when the Node has no record
    or one that cannot be read (docs/deploy.md, "Partial drain")."""
    raw = (core.read_node(node).metadata.annotations or {}).get(POD_DEVICES_KEY)
    try:
        record = json.loads(raw) if raw else None
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return None
    wanted = set(devices)
    return frozenset(
        pod
        for pod, held in record.items()
        if isinstance(held, list) and wanted.intersection(map(str, held))
    )
