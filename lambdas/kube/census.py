"""The kube Lambda's ``census`` op: the Nodes of each node group by health status
(``nodemedic.remediate.census``), published as ``NODES_METRIC`` in EMF lines of the
Lambda's own log, so counting a cluster costs no ``PutMetricData`` call per value."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from lambdas.kube.karpenter_repair import node_repair_on, repair_gates
from lambdas.kube.listing import each_node
from lambdas.observability import publish_count
from nodemedic.contracts.kube import HEALTH_LABEL, NODEGROUP_LABEL
from nodemedic.contracts.metrics import NODES_DIMENSIONS, NODES_METRIC
from nodemedic.remediate.census import NodeState, census


def node_states(core: client.CoreV1Api) -> list[NodeState]:
    found = []
    for node in each_node(core):
        labels = node.metadata.labels or {}
        found.append(
            NodeState(
                group=labels.get(NODEGROUP_LABEL),
                health=labels.get(HEALTH_LABEL),
                cordoned=bool(node.spec and node.spec.unschedulable),
            )
        )
    return found


def count_nodes(core: client.CoreV1Api, cluster: str) -> dict[str, Any]:
    """``{nodes, groups: {group: {status: count}}, karpenter_node_repair: [deployment],
    karpenter_repair_gates: {deployment: [gate]}}``, each count published as it is; the
    Karpenter Deployments whose own node repair would replace or reboot the same nodes are
    checked on the same reconcile, and warned of in the log."""
    groups: dict[str, dict[str, int]] = {}
    for (group, status), count in sorted(census(node_states(core)).items()):
        groups.setdefault(group, {})[status] = count
        dimensions = dict(zip(NODES_DIMENSIONS, (cluster, group, status), strict=True))
        publish_count(NODES_METRIC, count, dimensions)
    gates = repair_gates(core)
    return {
        "nodes": sum(sum(g.values()) for g in groups.values()),
        "groups": groups,
        "karpenter_node_repair": node_repair_on(gates),
        "karpenter_repair_gates": gates,
    }
