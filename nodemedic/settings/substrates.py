"""The settings of the substrates besides Auto Scaling that nodemedic may repair nodes on
(``nodemedic.remediate.target``), declared as the cluster's are and inherited by
``ClusterSettings``; their checks say what a bound cannot. A node outside every listed
substrate (and outside ``node_groups``) stays monitor-only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from nodemedic.remediate.target import AutoModeReboot, HyperPodRepair, Target, target_of
from nodemedic.settings.declare import setting

HyperPodEvents = Literal["notify", "act"]
NODEPOOL_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""A NodePool's name: a Kubernetes object name (DNS-1123 subdomain), so no IAM wildcard."""
HYPERPOD_NAME: Final = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
HYPERPOD_ID: Final = re.compile(r"^[a-z0-9]{12}$")
"""A HyperPod cluster's name and id, as botocore's SageMaker model constrains them (the id:
the last part of ``arn:aws:sagemaker:<region>:<account>:cluster/<id>``)."""


@dataclass(frozen=True, kw_only=True)
class SubstrateSettings:
    """Where nodemedic may act besides ``node_groups``, and how."""

    karpenter_nodepools: tuple[str, ...] = setting(
        (), schema={"items": {"type": "string", "pattern": NODEPOOL_NAME.pattern}}
    )
    """Karpenter NodePools (self-managed or EKS Auto Mode) whose nodes nodemedic may repair
    through their NodeClaims ([Karpenter and Auto Mode](#karpenter-and-eks-auto-mode))."""
    hyperpod_clusters: tuple[tuple[str, str], ...] = setting(
        (),
        mapping=("HyperPod cluster names to cluster ids", str),
        schema={"additionalProperties": {"type": "string", "pattern": HYPERPOD_ID.pattern}},
    )
    """SageMaker HyperPod clusters whose nodes nodemedic may reboot or replace through
    `BatchRebootClusterNodes`/`BatchReplaceClusterNodes`, name to cluster id, e.g.
    `{"ml-cluster": "abcdef123456"}`: the id names the log group
    `/aws/sagemaker/Clusters/<name>/<id>` the classifier is subscribed to and the ARN the IAM
    policies allow ([HyperPod](#sagemaker-hyperpod))."""
    hyperpod_repair: HyperPodRepair = setting("defer")
    """`defer`: nodemedic never acts on a HyperPod node, it notifies (HyperPod's own repair
    has the node); `when_recovery_off`: it acts while the cluster's `NodeRecovery` (read at
    run time with DescribeCluster) is `None`, and defers while it is `Automatic`. Either
    way, never both repairs on one node."""
    hyperpod_events: HyperPodEvents = setting("notify")
    """What HyperPod's own health monitoring agent's detections may do: every node of the
    cluster can write the log group they come from, so under `proof_of_origin: enforce`
    they are at most notified (`notify`); `act` lets them reboot or replace as their rule
    says ([security](security.md))."""
    auto_mode_reboot: AutoModeReboot = setting("notify")
    """What a reboot (or a GPU reset) of an EKS Auto Mode node becomes: its EC2 managed
    instances refuse EC2 and SSM actions, so only a replacement is possible. `notify`: the
    node is only reported (a reboot-class fault does not justify giving up an instance);
    `replace`: it is replaced through its NodeClaim."""
    reserved_capacity: tuple[str, ...] = setting(())
    """Groups of `node_groups`, NodePools of `karpenter_nodepools` or HyperPod clusters of
    `hyperpod_clusters` running on reserved capacity (Capacity Blocks, On-Demand Capacity
    Reservations): a replacement there may not get the capacity back, so it becomes a
    hand-off: the node stays cordoned and drained, the failure mail says so, nothing is
    terminated ([Reserved capacity](#reserved-capacity))."""

    @property
    def other_substrates(self) -> bool:
        """Whether any substrate besides Auto Scaling is listed: only then does the state
        machine look for one, so a cluster of Auto Scaling groups keeps its template."""
        return bool(self.karpenter_nodepools or self.hyperpod_clusters)

    def target_by_name(self, group: str) -> Target:
        """The target of a node known only by its group's name (the backtest's, which has no
        cloud to ask): a listed NodePool's is Karpenter's (an Auto Mode NodePool cannot be
        told by its name), a listed HyperPod cluster's is HyperPod's with its
        ``NodeRecovery`` unread, so taken as ``Automatic``, its default; any other name's an
        Auto Scaling group's, as the state machine finds it."""
        names = {name for name, _ in self.hyperpod_clusters}
        found = (
            "hyperpod"
            if group in names
            else "karpenter"
            if group in self.karpenter_nodepools
            else None
        )
        return target_of(
            {"substrate": found} if found else None,
            group,
            reserved=self.reserved_capacity,
            repair=self.hyperpod_repair,
        )

    def substrate_errors(self, node_groups: Sequence[str]) -> list[str]:
        return substrate_errors(
            self.karpenter_nodepools, self.hyperpod_clusters, self.reserved_capacity, node_groups
        )

    def substrate_policy(self) -> dict[str, Any]:
        """The plan's share of these settings (``nodemedic.remediate.policy.Policy``)."""
        return {
            "auto_mode_reboot": self.auto_mode_reboot,
            "hyperpod_repair": self.hyperpod_repair,
            "reserved_capacity": self.reserved_capacity,
        }


def substrate_errors(
    nodepools: Sequence[str],
    hyperpod: Sequence[tuple[str, str]],
    reserved: Sequence[str],
    node_groups: Sequence[str],
) -> list[str]:
    """Names go into IAM conditions and ARNs, and a typo would leave nodes monitor-only
    unnoticed: each must be one AWS or Kubernetes accepts, once."""
    errors = [
        f"karpenter_nodepools: {name!r} is not a NodePool name ({NODEPOOL_NAME.pattern})"
        for name in nodepools
        if not NODEPOOL_NAME.match(name)
    ]
    if len(set(nodepools)) != len(nodepools):
        errors.append("karpenter_nodepools lists a NodePool twice")
    for name, cluster_id in hyperpod:
        if not HYPERPOD_NAME.match(name):
            errors.append(
                f"hyperpod_clusters: {name!r} is not a HyperPod cluster name "
                f"({HYPERPOD_NAME.pattern})"
            )
        if not HYPERPOD_ID.match(cluster_id):
            errors.append(
                f"hyperpod_clusters: {name!r}: {cluster_id!r} is not a cluster id "
                "(12 lowercase letters or digits, the end of the cluster's ARN)"
            )
    listed = {*node_groups, *nodepools, *(name for name, _ in hyperpod)}
    errors += [
        f"reserved_capacity: {name!r} is in none of node_groups, karpenter_nodepools, "
        "hyperpod_clusters"
        for name in reserved
        if name not in listed
    ]
    return errors
