"""Nodes by health status per node group: what the dashboard's "Nodes by health status"
widget draws (``NODES_METRIC``), counted by the reconcile at every run.

A Node nodemedic never marked has no health label; it counts as ``Schedulable`` unless it
is cordoned (by a person, an upgrade, another tool), then as ``Unschedulable``: the widget
shows what can take work, whoever took it away. A label of an unknown value counts the
same way. A Node without the EKS node group label (self-managed, Karpenter) counts under
``UNGROUPED``. Every status of every group is counted, zeros included, so a line on the
graph drops to zero instead of stopping.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from nodemedic.contracts.kube import HEALTH_STATUSES, SCHEDULABLE, HealthStatus

UNGROUPED: Final = "none"
"""The ``NodeGroup`` of Nodes no EKS managed node group owns."""


@dataclass(frozen=True)
class NodeState:
    group: str | None
    """The ``eks.amazonaws.com/nodegroup`` label, None without one."""
    health: str | None
    """The ``nodemedic.io/node-health-status`` label, None without one."""
    cordoned: bool


def status_of(node: NodeState) -> HealthStatus:
    for status in HEALTH_STATUSES:
        if node.health == status:
            return status
    return "Unschedulable" if node.cordoned else SCHEDULABLE


def census(nodes: Iterable[NodeState]) -> dict[tuple[str, HealthStatus], int]:
    """(node group, status) → Nodes, for every status of each group that has a Node."""
    counts: dict[tuple[str, HealthStatus], int] = {}
    for node in nodes:
        group = node.group or UNGROUPED
        for status in HEALTH_STATUSES:
            counts.setdefault((group, status), 0)
        counts[(group, status_of(node))] += 1
    return counts
