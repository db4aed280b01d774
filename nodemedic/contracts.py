"""Every name that crosses a process boundary, defined once.

The agent writes log streams the classifier parses, the stacks set environment variables
the handlers read, the state machine writes ledger keys the CLI and the local world read,
and the kube Lambda puts labels and taints on Nodes that operators and HyperPod-style
tooling read. A name spelled twice drifts; each one lives here and is imported everywhere
else. docs/contracts.md describes the shapes behind the names.
"""

from __future__ import annotations

import json
import re
from typing import Final, Literal, get_args

# CloudWatch Logs: where the agents write ------------------------------------------------

NODE_LOG_GROUP: Final = "/nodemedic/{cluster}/nodes"
NODE_LOG_GROUP_RE: Final = re.compile(r"^/nodemedic/(?P<cluster>[A-Za-z][A-Za-z0-9-]*)/nodes$")
STREAM_RE: Final = re.compile(
    r"^(?P<instance>i-[0-9a-f]{8,17})/(?P<source>kmsg|health|deep-check)$"
)
"""``<instance-id>/kmsg``, ``<instance-id>/health`` and ``<instance-id>/deep-check``: the node
identity is the stream name."""


def node_log_group(cluster: str) -> str:
    return NODE_LOG_GROUP.format(cluster=cluster)


def kmsg_stream(instance_id: str) -> str:
    return f"{instance_id}/kmsg"


def health_stream(instance_id: str) -> str:
    return f"{instance_id}/health"


DEEP_CHECK_SOURCE: Final = "deep-check"
"""The deep health check's results (``agent.deepcheck``): stream ``<instance-id>/deep-check``,
health result lines whose last is the verdict, check ``deep-check`` on device ``node``."""


def deep_check_stream(instance_id: str) -> str:
    return f"{instance_id}/{DEEP_CHECK_SOURCE}"


DEEP_CHECK_PASSED_FAULT: Final = "deep-check-passed"
"""The catalog rule of a passed deep check's verdict: its decision is no remediation, the
state machine admits the node instead (``deep_check`` kube op: label ``Passed``, health
``Schedulable``, the health-check taint off)."""
DEEP_CHECK_FAILED_FAULT: Final = "deep-check-failed"
"""The catalog rule of a failed verdict (action replace): the state machine labels the node
``Failed`` before the normal decision path replaces it."""
TELEMETRY_SOURCE: Final = "telemetry"
"""Accelerator telemetry as CloudWatch Embedded Metric Format documents (``agent.telemetry.emf``,
off unless ``--telemetry-emf``): stream ``<instance-id>/telemetry``. CloudWatch turns each
line into metrics of ``TELEMETRY_NAMESPACE``; no line may match the subscription filter."""
TELEMETRY_NAMESPACE: Final = "NodeMedic/Accelerators"
TELEMETRY_DIMENSIONS: Final = ("ClusterName", "InstanceId")
"""Every telemetry metric's dimensions, before the device's own (``GPU``, ``NeuronCore`` or
``NeuronDevice``)."""


def telemetry_stream(instance_id: str) -> str:
    return f"{instance_id}/{TELEMETRY_SOURCE}"


KERNEL_FACILITY: Final = 0
"""The syslog facility of every record the kernel logs itself. A write to ``/dev/kmsg``
from user space is recorded with LOG_USER (1) or the non-zero facility it names, never 0
(``devkmsg_write``), so the facility is what tells a kernel line from an injected one."""
INJECTED_MARK: Final = "[injected facility={facility}] "
"""Put by the agent before every line of a kmsg stream the kernel did not log: a record of
another facility (``facility=1`` for LOG_USER), or a plain line of a followed file, whose
origin nothing tells (``facility=none``). A kernel record ships as its bare message, as it
always has, so the stream and the subscription filter see the text either way; the
classifier reads the mark (``split_injected``) and caps what such a line may do."""
_INJECTED_MARK_RE: Final = re.compile(r"\[injected facility=(?:\d+|none)\] ")


def shipped_message(message: str, facility: int | None) -> str:
    """The event text of a kernel log line with syslog facility ``facility`` (None: a plain
    line without a record header)."""
    if facility == KERNEL_FACILITY:
        return message
    return INJECTED_MARK.format(facility="none" if facility is None else facility) + message


def split_injected(text: str) -> tuple[bool, str]:
    """(marked injected, the message behind the mark) of a kmsg event's text."""
    if text.startswith("[injected "):
        found = _INJECTED_MARK_RE.match(text)
        if found is not None:
            return True, text[found.end() :]
    return False, text


PREVIOUS_BOOT_MARK: Final = "[previous boot {boot_id}] "
"""Put by the agent before every line it ships from the boot that died (pstore, see
``agent.pstore``), outside any injected mark: ``{boot_id}`` is the boot the agent last
shipped from, or ``unknown``. Such a line is evidence of a crash that a reboot already
ended, so the classifier reads the mark (``split_previous_boot``) and the decision is
recorded and notified, never acted on again on the new boot."""
_PREVIOUS_BOOT_MARK_RE: Final = re.compile(r"\[previous boot [0-9A-Za-z-]{1,64}\] ")


def previous_boot_message(shipped: str, boot_id: str | None) -> str:
    """The event text of ``shipped`` (a ``shipped_message``) logged by boot ``boot_id``."""
    return PREVIOUS_BOOT_MARK.format(boot_id=boot_id or "unknown") + shipped


def split_previous_boot(text: str) -> tuple[bool, str]:
    """(marked previous boot, the text behind the mark) of a kmsg event's text."""
    if text.startswith("[previous boot "):
        found = _PREVIOUS_BOOT_MARK_RE.match(text)
        if found is not None:
            return True, text[found.end() :]
    return False, text


IDENTITY_STREAM: Final = "{instance_id}/identity"
"""Where an agent registers its signing key: one event per start, the registration
encrypted under the cluster's origin key (``nodemedic.origin``). No subscription reads it;
the classifier reads it itself (``logs:GetLogEvents``) when it meets a key it does not know."""
IDENTITY_STREAM_RE: Final = re.compile(r"^i-[0-9a-f]{8,17}/identity$")


def identity_stream(instance_id: str) -> str:
    return IDENTITY_STREAM.format(instance_id=instance_id)


ORIGIN_KEY_ALIAS: Final = "alias/nodemedic-{cluster}-origin"
"""The KMS key agents encrypt their registrations under and only the classifier decrypts."""
ORIGIN_CONTEXT_CLUSTER: Final = "nodemedic:cluster"
ORIGIN_CONTEXT_INSTANCE: Final = "nodemedic:instance"
"""The KMS encryption context of a registration: it decrypts only as the registration of
that instance in that cluster, so it cannot be moved to another node's identity stream."""


def origin_key_alias(cluster: str) -> str:
    return ORIGIN_KEY_ALIAS.format(cluster=cluster)


SIGNATURE_MARK: Final = "[signed {key_id} {mac}] "
"""Put by the agent before every event it ships, outside every other mark: the id of its
registered key and the HMAC that binds the instance, the event's timestamp and the rest of
its text to that key (``nodemedic.origin.signing``)."""
_SIGNATURE_MARK_RE: Final = re.compile(
    r"\[signed (?P<key_id>[0-9a-f]{8}) (?P<mac>[A-Za-z0-9_-]{22})\] "
)


def split_signature(text: str) -> tuple[tuple[str, str] | None, str]:
    """((key id, mac) or None when unsigned, the text behind the mark) of an event's text."""
    if text.startswith("[signed "):
        found = _SIGNATURE_MARK_RE.match(text)
        if found is not None:
            return (found["key_id"], found["mac"]), text[found.end() :]
    return None, text


AGENT_LINE_PREFIX: Final = "nodemedic: "
"""What every line the agent writes of its own starts with (spool-full notes, overwritten
ring buffer counts, heartbeats): one subscription filter term selects them all."""
HEARTBEAT_MARK: Final = AGENT_LINE_PREFIX + "heartbeat "
HEARTBEAT_SECONDS: Final = 300
"""The agent's default heartbeat interval; the reconcile calls a node silent after
``SILENT_AFTER_BEATS`` of them."""
SILENT_AFTER_BEATS: Final = 3


def heartbeat_message(state: dict[str, int]) -> str:
    """The kmsg stream's heartbeat line: the mark, then the agent's state as compact JSON
    (``interval`` in seconds, and its counters: ``docs/contracts.md``)."""
    return HEARTBEAT_MARK + json.dumps(state, separators=(",", ":"), sort_keys=True)


def parse_heartbeat(text: str) -> dict[str, int] | None:
    """The state a heartbeat line carries; None for any other line (a kernel line, one
    marked injected or previous-boot: only the agent writes a bare heartbeat)."""
    if not text.startswith(HEARTBEAT_MARK) or len(text) > MAX_HEARTBEAT_CHARS:
        return None
    try:
        state = json.loads(text[len(HEARTBEAT_MARK) :])
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    return {k: v for k, v in state.items() if isinstance(k, str) and type(v) is int}


MAX_HEARTBEAT_CHARS: Final = 1024
"""A longer line is no heartbeat: what is stored of one stays small."""


# Environment variables --------------------------------------------------------------------

ENV_CLUSTER: Final = "NODEMEDIC_CLUSTER"
"""The agent's cluster name (the DaemonSet sets it)."""
ENV_CATALOG_EXTRA: Final = "NODEMEDIC_CATALOG_EXTRA"
"""Extra rule files, ``os.pathsep``-separated, tried before the built-in catalog."""
ENV_STATE_MACHINE_ARN: Final = "STATE_MACHINE_ARN"
"""The classify Lambda starts executions of this state machine."""
ENV_IDEMPOTENCY_TABLE: Final = "IDEMPOTENCY_TABLE"
"""The classify Lambda's idempotency and threshold table."""
ENV_ACCEPT_INJECTED: Final = "NODEMEDIC_ACCEPT_INJECTED_FAULTS"
"""``true`` or ``false``: the cluster setting ``accept_injected_faults``, for the classify
Lambda (a line marked injected acts only where it is ``true``)."""
ENV_PROOF_OF_ORIGIN: Final = "NODEMEDIC_PROOF_OF_ORIGIN"
"""``enforce`` or ``audit``: the cluster setting ``proof_of_origin``, for the classify Lambda
(enforced, a line whose origin is not proven is at most notified)."""
ENV_IDENTITY_CERTIFICATES: Final = "NODEMEDIC_IDENTITY_CERTIFICATES"
"""PEM certificates the classify Lambda verifies instance identity documents with; empty:
AWS's, vendored in ``nodemedic/origin/certificates``."""
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

# The stack ----------------------------------------------------------------------------------

STACK_NAME: Final = "nodemedic-{cluster}"
"""The CloudFormation stack of one cluster's pipeline; the CLI finds its resources by it."""
LEDGER_OUTPUT: Final = "LedgerTableName"
"""The stack's output naming the ledger table (``nodemedic breaker`` reads it)."""
STATE_MACHINE_OUTPUT: Final = "StateMachineArn"
"""The stack's output naming the remediation state machine (``nodemedic reboot|replace``
start it)."""


def stack_name(cluster: str) -> str:
    return STACK_NAME.format(cluster=cluster)


DASHBOARD_NAME: Final = "nodemedic-{cluster}"
"""The cluster's CloudWatch dashboard (``nodemedic dashboard --html`` reads it)."""


def dashboard_name(cluster: str) -> str:
    return DASHBOARD_NAME.format(cluster=cluster)


# Metrics -----------------------------------------------------------------------------------

METRICS_NAMESPACE: Final = "NodeMedic"
"""The pipeline's own metrics; a catalog rule without ``namespace`` publishes here too."""
REMEDIATIONS_METRIC: Final = "Remediations"
"""Count, one per finished execution, with the extra dimensions ``Action`` (notify, reboot
or replace, after escalation) and ``Outcome`` (notified, monitored, rebooted, replaced,
held, failed, ...)."""
REMEDIATION_SECONDS_METRIC: Final = "RemediationSeconds"
"""Seconds from the decision's arrival to its outcome."""
FAULT_TO_ACTION_METRIC: Final = "FaultToActionSeconds"
"""Seconds from the fault line's timestamp (``first_seen``) to the first change on the node."""
IN_REMEDIATION_METRIC: Final = "InRemediation"
"""Gauge (Count): nodes of the node group holding a breaker slot, published on every admit
and release."""
BREAKER_METRIC: Final = "BreakerHeld"
"""Count, each time the breaker holds a decision back."""
BREAKER_TRIPPED_METRIC: Final = "BreakerTripped"
"""Count (dimension Cluster only): 1 each time the cluster's breaker trips on a limit (the
cluster cap or a group's rate), once per trip; its alarm pages."""
REMEDIATION_EXTRA_DIMENSIONS: Final = ("Action", "Outcome")
"""Dimensions of REMEDIATIONS_METRIC besides Cluster and NodeGroup."""
LINES_CLASSIFIED_METRIC: Final = "LinesClassified"
FAULTS_FOUND_METRIC: Final = "FaultsFound"
DECISIONS_STARTED_METRIC: Final = "DecisionsStarted"
CLASSIFIER_METRICS: Final = (LINES_CLASSIFIED_METRIC, FAULTS_FOUND_METRIC, DECISIONS_STARTED_METRIC)
"""Published by the classifier with the dimensions ``Cluster`` and ``service``."""
UNPROVEN_METRIC: Final = "UnprovenEvidence"
"""Published by the classifier for each reboot or replace line whose origin it could not
prove (capped where ``proof_of_origin`` is ``enforce``, counted either way)."""
MALFORMED_METRIC: Final = "MalformedPayloads"
"""Published by the classifier for each payload it sends to the dead-letter queue."""
STRANDED_METRIC: Final = "StrandedNodes"
"""Gauge (Count, dimension Cluster only): nodes carrying nodemedic's taint with no live
remediation, published by the reconcile at every run."""

SILENT_METRIC: Final = "SilentNodes"
"""Gauge (Count, dimension Cluster only): Ready nodes whose agent has not been heard for
``SILENT_AFTER_BEATS`` heartbeat intervals, published by the reconcile at every run."""

NODES_METRIC: Final = "Nodes"
"""Gauge (Count, dimensions Cluster, NodeGroup and Status, a ``HealthStatus``): the Nodes of
each node group by their health label, published by the reconcile at every run
(``nodemedic.remediate.census``)."""
NODES_DIMENSIONS: Final = ("Cluster", "NodeGroup", "Status")

# The ledger (DynamoDB, partition ``pk``, sort ``sk``) ---------------------------------------

LOCK_SK: Final = "inflight"
"""``<instance-id>`` / ``inflight``: the node lock, one remediation per node."""
BREAKER_SK: Final = "breaker"
"""``group#<asg>`` / ``breaker``: the instances of a node group holding a breaker slot."""
GROUP_PK_PREFIX: Final = "group#"
DECISION_SK_PREFIX: Final = "decision#"
"""``<instance-id>`` / ``decision#<decision_id>``: one remediation, its state and timings."""
HEARTBEAT_PK: Final = "heartbeat"
"""``heartbeat`` / ``<instance-id>``: when the node's agent was last heard (``heard_at``,
epoch seconds), the state its heartbeat carried, and ``notified_at`` once its silence was
notified. One partition, so one Query reads a whole cluster."""
REBOOT_SK_PREFIX: Final = "reboot#"
"""``<instance-id>`` / ``reboot#<fault_id>``: the last reboot for a fault (escalation)."""
FLEET_SK_PREFIX: Final = "fleet#"
"""``group#<asg>`` / ``fleet#<fault_id>``: the group's nodes that reported a fault within
the fleet window, and whether they make a fleet event."""


def group_pk(group: str) -> str:
    return GROUP_PK_PREFIX + group


CLUSTER_PK_PREFIX: Final = "cluster#"
"""``cluster#<name>`` / ``breaker``: the cluster's breaker, its holders across node groups
and its tripped state; ``cluster#<name>`` / ``rate#<group>#<action>#<window>``: the
remediations of that action started in a group in one clock hour or UTC day."""
RATE_SK_PREFIX: Final = "rate#"
HISTORY_TTL_ATTRIBUTE: Final = "purge_at"
"""The ledger table's time-to-live attribute (epoch seconds): only decision records carry
it, ``history_days`` after their plan, so ``nodemedic history`` reads them that long."""
STEP_AT_PREFIX: Final = "at_"
"""``at_<state>`` on a decision record: when its remediation entered that state (``held``,
``marking``, ``draining``, ``rebooting``, ``replacing``, ``closed``, ``failed``...)."""


def cluster_pk(cluster: str) -> str:
    return CLUSTER_PK_PREFIX + cluster


# Kubernetes --------------------------------------------------------------------------------

HealthStatus = Literal[
    "Schedulable", "Unschedulable", "UnschedulablePendingReboot", "UnschedulablePendingReplacement"
]
"""Values of the node health label, as the EKS node monitoring agent's node auto repair and
HyperPod read them."""
HEALTH_STATUSES: Final[tuple[HealthStatus, ...]] = get_args(HealthStatus)
SCHEDULABLE: Final[HealthStatus] = "Schedulable"
STATUS_OF_ACTION: Final[dict[str, HealthStatus]] = {
    "notify": SCHEDULABLE,
    "reboot": "UnschedulablePendingReboot",
    "replace": "UnschedulablePendingReplacement",
}
"""The health label a decision for each action (every one but ``ignore``) puts on its node."""
HEALTH_LABEL: Final = "nodemedic.io/node-health-status"
NODEGROUP_LABEL: Final = "eks.amazonaws.com/nodegroup"
"""The EKS managed node group of a Node (EKS sets it); the reconcile counts Nodes by it."""
LABEL_PREFIX: Final = "nodemedic.io/"
TAINT_KEY: Final = "nodemedic.io/unhealthy"
"""``nodemedic.io/unhealthy=<fault_id>:NoSchedule`` while nodemedic acts on a node."""
TAINT_EFFECT: Final = "NoSchedule"
CLEARED_REASON: Final = "NodeMedicCleared"
"""The reason of a node condition nodemedic set back to healthy."""
FAULT_TYPE_LABEL: Final = "nodemedic.io/fault-type"
"""The fault id of the remediation that took the node out (HyperPod's ``fault-types``): set
with the taint, removed when the node is given back, kept when its remediation failed."""
FAULT_REASON_LABEL: Final = "nodemedic.io/fault-reason"
"""Why the node is out: the fault's metric name while its remediation works (e.g.
``NvidiaXid_79``), ``<step>-failed`` once it stopped at that step."""
PENDING_STATUSES: Final[dict[HealthStatus, str]] = {
    "UnschedulablePendingReboot": "reboot",
    "UnschedulablePendingReplacement": "replace",
}
"""The health label values an operator sets to ask for a reboot or a replacement by hand
(HyperPod's), and the action each asks for; the request reconcile reads them every minute."""
MANUAL_CONDITION: Final = "NodeMedicManualRemediation"
"""Node condition, ``True`` while a remediation a person asked for works on the node (its
message says who asked and why), set back to ``False`` when the node is given back."""
FIELD_MANAGER: Final = "nodemedic"
"""The field manager nodemedic's kube Lambda writes Nodes as: the request reconcile tells a
health label a person set from one nodemedic set itself by the label's manager."""
MANUAL_SOURCE: Final = "manual"
"""The ``source`` of a decision a person asked for (``nodemedic reboot|replace``, or the
health label), instead of ``kmsg`` or ``health``."""
FAILED_CONDITION: Final = "NodeMedicRemediationFailed"
"""Node condition, ``True`` once a remediation of the node failed: its reason is the error,
its message the step and the decision."""
FLEET_LABEL: Final = "nodemedic.io/fleet-event"
"""``<fault_id>``: the node reported a fault that many nodes of its group reported at once
(a fleet event, a rollout or a job rather than hardware); nodemedic held its hand."""
FLEET_CONDITION: Final = "NodeMedicFleetEvent"
"""Node condition, ``True`` while the node is held for a fleet event: its message says why."""
REMEDIATOR_GROUP: Final = "nodemedic:remediator"
"""The Kubernetes group the kube Lambda acts as: bound by lambdas/kube/rbac.yaml, mapped to
the Lambda's role by the EKS access entry, and given to the local world's remediator user."""
DEEP_CHECK_LABEL: Final = "nodemedic.io/deep-health-check-status"
"""HyperPod's values: ``InProgress`` from registration until the deep check's verdict,
then ``Passed`` or ``Failed``."""
DeepCheckStatus = Literal["InProgress", "Passed", "Failed"]
DEEP_CHECK_TAINT_KEY: Final = "nodemedic.io/health-check"
"""``nodemedic.io/health-check:NoSchedule``: put by the kubelet at registration
(``--register-with-taints``), removed once the node's deep check passed."""
DEEP_CHECK_SINCE_ANNOTATION: Final = "nodemedic.io/deep-check-since"
"""ISO 8601 UTC time nodemedic put the node behind the health-check taint (after a reboot);
a node without it waits since its creation. ``deep_check_timeout`` counts from either."""
DEEP_CHECK_HELD_ANNOTATION: Final = "nodemedic.io/held-for-deep-check"
"""``<decision_id>`` of the reboot that left the node cordoned until its deep check passes
(``post_reboot_deep_check``): only then does a pass uncordon the node as well."""
DEEP_CHECK_PASSED_AT_ANNOTATION: Final = "nodemedic.io/deep-check-passed-at"
"""ISO 8601 UTC time of the last passing deep check's verdict line. The agent checks right
after the boot, often before the reboot's watch has seen the node back: that pass finds the
node still under remediation and admits nothing, and the hold that follows reads this
instead of waiting for a verdict already given (``lambdas.kube.gate``)."""
DEEP_CHECK_OVERDUE_ANNOTATION: Final = "nodemedic.io/deep-check-overdue"
"""The wait (its start, as above) people were told had no verdict within
``deep_check_timeout``: told once per wait."""
AWAITING_DEEP_CHECK_OUTCOME: Final = "rebooted-awaiting-deep-check"
"""A reboot remediation's outcome when the node came back with a new boot id and was left
cordoned, behind the health-check taint, for its post-repair deep check."""
UNSCHEDULABLE: Final[HealthStatus] = "Unschedulable"
SPARE_LABEL: Final = "nodemedic.io/spare"
"""``true`` on the Node of an instance nodemedic keeps in Auto Scaling ``Standby`` as a
spare of its node group (setting ``spares``); removed when a replace brings it into service."""
SPARE_TAINT_KEY: Final = "nodemedic.io/spare"
"""``nodemedic.io/spare:NoSchedule``: a spare is a joined, Ready Node, and takes no pods
until a replace brings it into service. Separate from the health-check taint, which a
passing deep check removes while the instance is still in Standby."""
CONDITION_NEURON: Final = "NeuronHasError"
CONDITION_ACCELERATED: Final = "AcceleratedHardwareReady"
CONDITION_STORAGE: Final = "StorageReady"
CONDITION_KERNEL: Final = "KernelReady"

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
JOB_PK_PREFIX: Final = "job#"
"""Ledger: ``job#<namespace>/<name>`` / ``rule#<name>``: one rule's state;
``job#<namespace>/<name>`` / ``restarts``: the job's restart history and run epoch."""
RULE_SK_PREFIX: Final = "rule#"
RESTARTS_SK: Final = "restarts"
RESTART_WATCH_SK: Final = "restart-watch"
"""``job#<namespace>/<name>`` / ``restart-watch``: the last restart whose pods are not all
running yet (when it was decided, the uids of the pods it replaces): RestartLatencySeconds."""
JOB_BREAKER_SK_PREFIX: Final = "jobs#"
JOB_BREAKER_SK: Final = "jobs#breaker"
"""``cluster#<name>`` / ``jobs#breaker``: the job breaker (``nodemedic.jobs.breaker``): the
verdicts admitted in the window, and the tripped state."""
JOB_LINES_HEARD_SK: Final = "jobs#heard"
"""``cluster#<name>`` / ``jobs#heard``: when the application log group last delivered
(``heard_at``, epoch seconds): a silent group holds the schedule's verdicts."""
ENV_JOB_BREAKER: Final = "NODEMEDIC_JOB_BREAKER"
"""The job monitor's breaker limits (``nodemedic.jobs.breaker.JobLimits``), JSON."""
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
JOB_DIMENSIONS: Final = ("Cluster", "Job")
"""The dimensions, exactly these, of every job metric: the alarm and dashboard query them."""
JOB_COUNT_METRICS: Final = (JOBS_RESTARTED_METRIC, JOBS_FAILED_METRIC, JOB_RESTARTS_HELD_METRIC)


def job_pk(namespace: str, name: str) -> str:
    return f"{JOB_PK_PREFIX}{namespace}/{name}"
