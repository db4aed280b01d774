"""The environment variables the stacks and the local world set and the handlers and the
agent read."""

from __future__ import annotations

from typing import Final

# Environment variables --------------------------------------------------------------------

ENV_CLUSTER: Final = "NODEMEDIC_CLUSTER"
"""The cluster's name: the agent's (the DaemonSet sets it), and the classify Lambda's where it
reads HyperPod log groups, whose names do not say it."""
ENV_CATALOG_EXTRA: Final = "NODEMEDIC_CATALOG_EXTRA"
"""Extra rule files, ``os.pathsep``-separated, tried before the built-in catalog."""
ENV_STATE_MACHINE_ARN: Final = "STATE_MACHINE_ARN"
"""The classify Lambda starts executions of this state machine."""
ENV_IDEMPOTENCY_TABLE: Final = "IDEMPOTENCY_TABLE"
"""The classify Lambda's idempotency and threshold table."""
ENV_ACCEPT_INJECTED: Final = "NODEMEDIC_ACCEPT_INJECTED_FAULTS"
"""``true`` or ``false``: the cluster setting ``accept_injected_faults``, for the classify
Lambda (a line marked injected acts only where it is ``true``)."""
ENV_GPU_RESET: Final = "NODEMEDIC_GPU_RESET"
"""``true`` or ``false`` (unset: ``false``): the cluster setting ``gpu_reset``, for the
classify Lambda (a fault whose rule says ``reset`` is a reboot where it is not ``true``)."""
ENV_STALE_AFTER: Final = "NODEMEDIC_STALE_AFTER"
"""Seconds (unset: ``nodemedic.settings``' default): the cluster setting ``stale_after``, for
the classify Lambda (an older line is at most notified)."""
ENV_PROOF_OF_ORIGIN: Final = "NODEMEDIC_PROOF_OF_ORIGIN"
"""``enforce`` or ``audit``: the cluster setting ``proof_of_origin``, for the classify Lambda
(enforced, a line whose origin is not proven is at most notified)."""
ENV_IDENTITY_CERTIFICATES: Final = "NODEMEDIC_IDENTITY_CERTIFICATES"
"""PEM certificates the classify Lambda verifies instance identity documents with; empty:
AWS's, vendored in ``nodemedic/origin/certificates``."""
HYPERPOD_LOG_GROUPS_ENV: Final = "NODEMEDIC_HYPERPOD_LOG_GROUPS"
"""Comma-separated: the SageMaker HyperPod cluster log groups (``/aws/sagemaker/Clusters/
<name>/<id>``) the classify Lambda reads HyperPod's own findings from; an event of any other
such group is refused (``nodemedic.remediate.hyperpod``). Unset or empty: none."""
HYPERPOD_EVENTS_ENV: Final = "NODEMEDIC_HYPERPOD_EVENTS"
"""``notify`` or ``act`` (unset: ``notify``), for the classify Lambda: where the origin is
enforced, HyperPod's events (unsigned, writable by every node of the cluster) are at most
notified unless this is ``act`` (docs/security.md)."""
ENV_LEDGER_TABLE: Final = "LEDGER_TABLE"
"""The ledger table: the classify Lambda records heartbeats there, the kube Lambda's
``silent`` op reads them."""
ENV_EKS_CLUSTER: Final = "EKS_CLUSTER_NAME"
"""The kube Lambda's EKS cluster (its endpoint and token come from it)."""
ENV_KUBECONFIG: Final = "KUBECONFIG"
"""The kube Lambda's kubeconfig instead of EKS (the local world sets it)."""
ENV_TOPIC_ARN: Final = "NOTIFY_TOPIC_ARN"
"""The job monitor tells people through this SNS topic when it fails a job."""
ENV_METRICS_NAMESPACE: Final = "POWERTOOLS_METRICS_NAMESPACE"
ENV_SERVICE_NAME: Final = "POWERTOOLS_SERVICE_NAME"
ENV_LOG_LEVEL: Final = "POWERTOOLS_LOG_LEVEL"

ENV_JOB_BREAKER: Final = "NODEMEDIC_JOB_BREAKER"
"""The job monitor's breaker limits (``nodemedic.jobs.breaker.JobLimits``), JSON."""
ENV_IMDS_ENDPOINT: Final = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
"""The AWS SDKs' setting for another instance metadata endpoint: the agent reads it, the
local world points it at its moto server."""
ENV_PLANNED: Final = "NODEMEDIC_PLANNED"
"""JSON ``{cluster, node_groups, spot_groups, lead_time}``: what the planned Lambda turns
AWS's notices into decisions with (``nodemedic.remediate.planned``)."""
