"""Jobs: the training-log group, the job annotations nodemedic reads and writes, the job
monitor's ledger keys, setting and metrics (HyperPod's schema, docs/jobs.md)."""

from __future__ import annotations

import re
from typing import Final

from nodemedic.contracts.metrics import CLUSTER_DIMENSION, JOB_DIMENSION

# Jobs: log monitoring in HyperPod's schema (docs/jobs.md) ------------------------------------

APPLICATION_LOG_GROUP: Final = "/aws/containerinsights/{cluster}/application"
"""Where Container Insights' Fluent Bit ships pods' stdout and stderr: one JSON record per
line, ``log`` and ``kubernetes`` (``pod_name``, ``namespace_name``, ``labels``...)."""
APPLICATION_LOG_GROUP_RE: Final = re.compile(
    r"^/aws/containerinsights/(?P<cluster>[A-Za-z][A-Za-z0-9_-]*)/application$"
)


def application_log_group(cluster: str) -> str:
    return APPLICATION_LOG_GROUP.format(cluster=cluster)


LOG_MONITORING_ANNOTATION: Final = "nodemedic.io/log-monitoring-configuration"
"""On a job: HyperPod's ``logMonitoringConfiguration`` rules, YAML or JSON."""
RUN_POLICY_ANNOTATION: Final = "nodemedic.io/run-policy"
"""On a job: HyperPod's ``runPolicy`` (``jobMaxRetryCount``, ``restartPolicy``,
``cleanPodPolicy``; its ``logMonitoringConfiguration`` is read too), YAML or JSON."""
JOB_MAX_RETRY_ANNOTATIONS: Final = (
    "nodemedic.io/job-max-retry-count",
    "sagemaker.amazonaws.com/job-max-retry-count",
)
"""On a job: ``jobMaxRetryCount`` where the run policy does not give it (HyperPod's spelling
second)."""
JOB_AUTO_RESUME_ANNOTATIONS: Final = (
    "nodemedic.io/enable-job-auto-resume",
    "sagemaker.amazonaws.com/enable-job-auto-resume",
)
"""On a job: ``"true"`` opts it in to auto-resume: restarted whole once a node it ran on is
repaired (HyperPod's spelling second)."""
JOB_RESUMED_BY_ANNOTATION: Final = "nodemedic.io/job-resumed-by"
"""Put on a job auto-resumed: the remediation's decision id, so a repeated call resumes it once."""
PYTORCHJOB_API: Final = ("kubeflow.org", "v1", "pytorchjobs")
"""Kubeflow's PyTorchJob (group, version, plural): its pods carry ``training.kubeflow.org/job-name``
and an owner reference to it."""
JOB_NAME_LABELS: Final = (
    "batch.kubernetes.io/job-name",
    "job-name",
    "training.kubeflow.org/job-name",
)
"""Pod labels naming the pod's job: batch/v1 Job (1.27+, then older), Kubeflow's PyTorchJob."""
JOB_RESTARTS_ANNOTATION: Final = "nodemedic.io/job-restarts"
"""Put on a job: the restarts nodemedic made, ``<total> (<full> full)``."""
JOB_FAILED_ANNOTATION: Final = "nodemedic.io/job-failed"
"""Put on a job once its restarts are spent: the verdict that failed it."""
JOB_EVENT_REASONS: Final = {
    "restart-pods": "NodeMedicPodsRestarted",
    "restart-job": "NodeMedicJobRestarted",
    "fail": "NodeMedicJobFailed",
    "invalid": "NodeMedicInvalidLogMonitoring",
    "resume": "NodeMedicJobResumed",
    "held": "NodeMedicRestartHeld",
}
"""Reasons of the Kubernetes Events nodemedic puts on a job."""
NODE_EVIDENCE_EVENT_REASONS: Final = {
    "notify": "NodeMedicJobReportedHardwareError",
    "deep-check": "NodeMedicDeepCheckRequested",
}
"""Reasons of the Warning Events the job monitor puts on a Node whose pod's output names a
hardware error (``nodemedic.jobs.hardware``), by the capped action."""
NODE_EVENT_NAMESPACE: Final = "default"
"""Where a Node's Events live (a Node has no namespace; ``kubectl describe node`` reads them
from here)."""
JOB_NODE_HARDWARE_METRIC: Final = "JobNodeHardwareErrors"
"""Count, dimensions Cluster and Job, one per node and hardware rule told (at most one an
hour): a job whose output names a hardware error on its node."""
JOB_PK_PREFIX: Final = "job#"
"""Ledger: ``job#<namespace>/<name>`` / ``rule#<name>``: one rule's state;
``job#<namespace>/<name>`` / ``restarts``: the job's restart history and run epoch. Every key
the job monitor reads or writes starts so: its role may touch no other partition
(``dynamodb:LeadingKeys``, stacks/jobs.py)."""
JOB_LEADING_KEYS: Final = f"{JOB_PK_PREFIX}*"
"""The job monitor's partitions, as its IAM condition (``StringLike``) names them."""
RULE_SK_PREFIX: Final = "rule#"
RESTARTS_SK: Final = "restarts"
RESTART_WATCH_SK: Final = "restart-watch"
"""``job#<namespace>/<name>`` / ``restart-watch``: the last restart whose pods are not all
running yet (when it was decided, the uids of the pods it replaces): RestartLatencySeconds."""
JOB_BREAKER_SK_PREFIX: Final = "jobs#"
JOB_BREAKER_SK: Final = "jobs#breaker"
"""``job#<cluster>`` / ``jobs#breaker``: the job breaker (``nodemedic.jobs.breaker``): the
verdicts admitted in the window, and the tripped state."""
JOB_LINES_HEARD_SK: Final = "jobs#heard"
"""``job#<cluster>`` / ``jobs#heard``: when the application log group last delivered
(``heard_at``, epoch seconds): a silent group holds the schedule's verdicts."""
JOBS_RESTARTED_METRIC: Final = "JobsRestarted"
"""Count, dimensions Cluster and Job (``<namespace>/<name>``), one per restart."""
JOBS_FAILED_METRIC: Final = "JobsFailed"
"""Count, dimensions Cluster and Job, once when a job's restarts are spent; its alarm pages."""
FAULT_DETECTION_SECONDS_METRIC: Final = "FaultDetectionLatencySeconds"
"""Seconds from the evidence (the line, or the deadline a silence passed) to the verdict."""
RESTART_SECONDS_METRIC: Final = "RestartLatencySeconds"
"""Seconds from a restart decision to every pod of the job running again (dimensions
Cluster and Job), read from the pods' Ready times by the schedule."""
JOB_RESTARTS_HELD_METRIC: Final = "JobRestartsHeld"
"""Count, dimensions Cluster and Job, one per verdict the job breaker (or monitor-only)
held: the holds on a graph, not only in the job's Events."""
JOB_DIMENSIONS: Final = (CLUSTER_DIMENSION, JOB_DIMENSION)
"""The dimensions, exactly these, of every job metric: the alarm and dashboard query them."""
JOB_COUNT_METRICS: Final = (JOBS_RESTARTED_METRIC, JOBS_FAILED_METRIC, JOB_RESTARTS_HELD_METRIC)


def job_pk(namespace: str, name: str) -> str:
    return f"{JOB_PK_PREFIX}{namespace}/{name}"


def job_cluster_pk(cluster: str) -> str:
    """The job monitor's cluster-wide partition (its breaker, when lines were last heard):
    under the job prefix, so its role's key condition covers it; a cluster's name has no
    ``/``, so it is no job's partition."""
    return f"{JOB_PK_PREFIX}{cluster}"
