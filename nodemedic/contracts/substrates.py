"""Who owns a node's instance, and the names that cross a process boundary to repair it there.

An instance is repaired through what owns it: its Auto Scaling group, the Karpenter NodeClaim
that launched it (self-managed Karpenter or EKS Auto Mode), or the SageMaker HyperPod cluster
it is a node of. The state machine finds the owner, the policy caps the plan to the rungs the
owner allows, and each rung is done the owner's way; the kube Lambda's operations and the
HyperPod log names below are what the parts agree on.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Substrate = Literal["autoscaling", "karpenter", "automode", "hyperpod", "none"]
"""``autoscaling``: an Auto Scaling group of ``node_groups``; ``karpenter``: a NodeClaim of a
self-managed Karpenter NodePool; ``automode``: a NodeClaim of EKS Auto Mode (its NodeClass is
``eks.amazonaws.com``'s, its instance an EC2 managed instance); ``hyperpod``: a node of a
SageMaker HyperPod cluster; ``none``: no owner nodemedic may act through (monitor only)."""
SUBSTRATES: Final[tuple[Substrate, ...]] = get_args(Substrate)

# Karpenter ---------------------------------------------------------------------------------

KARPENTER_GROUP: Final = "karpenter.sh"
NODECLAIM_VERSION: Final = "v1"
NODECLAIM_PLURAL: Final = "nodeclaims"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
"""Karpenter's label naming a node's NodePool; read from the NodeClaim (which Karpenter
writes), never from the Node alone."""
AUTO_MODE_NODECLASS_GROUP: Final = "eks.amazonaws.com"
"""The API group of an EKS Auto Mode NodeClass (``spec.nodeClassRef.group`` of its
NodeClaims); a self-managed Karpenter on AWS uses ``karpenter.k8s.aws``."""

NODECLAIM_OF_OP: Final = "nodeclaim_of"
"""kube Lambda operation: ``{"op", "node"}`` → ``{"nodeclaim": name or "", "nodepool": str,
"nodeclass_group": str, "provider_id": str}``: the NodeClaim whose ``status.nodeName`` is the
node (its ``status.providerID`` must name the same instance), ``""`` when none."""
DELETE_NODECLAIM_OP: Final = "delete_nodeclaim"
"""kube Lambda operation: ``{"op", "node", "nodeclaim"}`` → ``{"deleted": bool}``: deletes
the NodeClaim only while it still names the node, so Karpenter terminates its instance."""
NODECLAIM_GONE_OP: Final = "nodeclaim_gone"
"""kube Lambda operation: ``{"op", "node", "nodeclaim"}`` → ``{"gone": bool}``: true once both
the NodeClaim and its Node are gone from the API."""

# SageMaker HyperPod ------------------------------------------------------------------------

HYPERPOD_LOG_GROUP_PREFIX: Final = "/aws/sagemaker/Clusters/"
HYPERPOD_AGENT_STREAM_PREFIX: Final = "SagemakerHealthMonitoringAgent/"
"""Streams ``SagemakerHealthMonitoringAgent/<instance group>/<instance id>``: the health
monitoring agent's detection events, one JSON object each."""
HYPERPOD_DEEP_HEALTH_STREAM_PREFIX: Final = "DeepHealthCheckResults/"
"""Streams ``DeepHealthCheckResults/<id>``: HyperPod's deep health check results."""
HYPERPOD_SOURCE: Final = "hyperpod"
"""The ``source`` of a decision made from HyperPod's own health monitoring agent."""


def hyperpod_log_group(cluster_name: str, cluster_id: str) -> str:
    """The log group HyperPod writes a cluster's health events to; the id is the last part of
    the cluster's ARN (``arn:aws:sagemaker:<region>:<account>:cluster/<id>``)."""
    return f"{HYPERPOD_LOG_GROUP_PREFIX}{cluster_name}/{cluster_id}"
