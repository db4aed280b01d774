"""Metric names, namespaces and dimensions: the handlers and the state machine publish them,
the alarms, dashboards and the console read them."""

from __future__ import annotations

from typing import Final

# Metrics -----------------------------------------------------------------------------------

METRICS_NAMESPACE: Final = "NodeMedic"
CLUSTER_DIMENSION: Final = "Cluster"
"""On every pipeline metric: the cluster's short name (``ClusterSettings.name``)."""
NODE_GROUP_DIMENSION: Final = "NodeGroup"
"""On the remediation metrics: the Auto Scaling group of the node."""
JOB_DIMENSION: Final = "Job"
"""On the job metrics: ``<namespace>/<name>``."""
"""The pipeline's own metrics; a catalog rule without ``namespace`` publishes here too."""
REMEDIATIONS_METRIC: Final = "Remediations"
"""Count, one per finished execution, with the extra dimensions ``Action`` (notify, reboot
or replace, after escalation), ``Outcome`` (notified, monitored, rebooted, replaced,
held, failed, ...) and ``SUBSTRATE_DIMENSION``."""
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
QUARANTINED_METRIC: Final = "Quarantined"
"""Count: 1 per node cordoned at once, before the breaker (``nodemedic.remediate.quarantine``)."""
QUARANTINE_TRIPPED_METRIC: Final = "QuarantineTripped"
"""Count (dimension Cluster only): 1 the first time a quarantine window refuses a node; its
alarm pages."""
SUBSTRATE_DIMENSION: Final = "Substrate"
"""On REMEDIATIONS_METRIC only: who repaired the node, a ``Substrate`` of
``nodemedic.contracts.substrates`` (``none`` too where the execution ended before its plan
named one). The other pipeline metrics and the catalog's keep ``Cluster`` and ``NodeGroup``
alone: their alarms query ``SCHEMA(namespace, Cluster, NodeGroup)``, which matches only
metrics with exactly those dimensions, so one more would silence them."""
REMEDIATION_EXTRA_DIMENSIONS: Final = ("Action", "Outcome")
"""Dimensions of REMEDIATIONS_METRIC besides Cluster, NodeGroup and Substrate: what the
dashboard groups it by."""
LINES_CLASSIFIED_METRIC: Final = "LinesClassified"
FAULTS_FOUND_METRIC: Final = "FaultsFound"
DECISIONS_STARTED_METRIC: Final = "DecisionsStarted"
CLASSIFIER_METRICS: Final = (LINES_CLASSIFIED_METRIC, FAULTS_FOUND_METRIC, DECISIONS_STARTED_METRIC)
"""Published by the classifier with the dimensions ``Cluster`` and ``service``."""
UNPROVEN_METRIC: Final = "UnprovenEvidence"
"""Published by the classifier for each reboot or replace line whose origin it could not
prove (capped where ``proof_of_origin`` is ``enforce``, counted either way): with the
dimensions ``Cluster`` and ``service``, all of them; and again with ``Cluster`` and
``REASON_DIMENSION``, by the class of the reason, which its alarm tells apart."""
REASON_DIMENSION: Final = "Reason"
FORGED_REASON: Final = "forged"
"""A signature that does not hold: a MAC that does not match, a key the instance did not
register while its other keys are known. Someone writes with the shared credential."""
UNVERIFIABLE_REASON: Final = "unverifiable"
"""A line whose origin could not be checked at all: unsigned, no registration of its
instance holds or can be read, no certificate for the Region. Every fault of that node is
capped to notify until someone fixes it: this class pages."""
MALFORMED_METRIC: Final = "MalformedPayloads"
"""Published by the classifier for each payload it sends to the dead-letter queue."""
UNREADABLE_NOTICES_METRIC: Final = "UnreadableNotices"
"""Published by the planned Lambda for each event of a kind it acts on (an AWS Health
scheduled change, a Capacity Block or Spot warning) whose payload cannot be read: logged
with the event, and dropped."""
UNPARSABLE_METRIC: Final = "UnparsableLines"
"""Published by the classifier for each line that is not what its stream carries (a health
line that is no health result, a heartbeat without its state); the rest of its batch is
classified."""
HYPERPOD_REFUSED_METRIC: Final = "HyperPodEventsRefused"
"""Published by the classifier for each SageMaker HyperPod event it refuses whole, with the
dimensions ``Cluster`` and ``REASON_DIMENSION``: ``unlisted`` (a log group the cluster does not
list) or ``no-instance`` (a stream that names no instance): logged, never classified."""
KUBE_REFUSED_METRIC: Final = "KubeRefused"
"""Published by the kube Lambda for each Kubernetes API call the API server refused as
overloaded or broken, or that could not reach it (``KUBE_UNAVAILABLE``), with the dimensions
``Cluster`` and ``REASON_DIMENSION``: the HTTP status (``429``, ``500``, ``503``...) or
``unreachable``. Each is retried; a storm's count of them is how hard nodemedic pressed the
API server."""
AWS_THROTTLED_METRIC: Final = "AwsThrottled"
"""Published by the classifier for each answer of AWS that throttled one of its calls
(before the retry, botocore's or the classifier's own, which may then succeed), with the
dimensions ``Cluster`` and ``REASON_DIMENSION``: the service and operation
(``states.StartExecution``)."""
STRANDED_METRIC: Final = "StrandedNodes"
"""Gauge (Count, dimension Cluster only): nodes carrying nodemedic's taint with no live
remediation, published by the reconcile at every run."""
HELD_OUT_METRIC: Final = "NodesHeldOut"
"""Gauge (Count, dimension Cluster only): nodes out of service under a person's decision
(handed off, a repair denied or left unanswered where that holds: ``parking.HELD_OUT``),
published by the reconcile at every run; not remediations, so not on the cluster's breaker."""

SILENT_METRIC: Final = "SilentNodes"
"""Gauge (Count, dimension Cluster only): Ready nodes whose agent has not been heard for
``SILENT_AFTER_BEATS`` heartbeat intervals, published by the reconcile at every run."""

NODES_METRIC: Final = "Nodes"
"""Gauge (Count, dimensions Cluster, NodeGroup and Status, a ``HealthStatus``): the Nodes of
each node group by their health label, published by the reconcile at every run
(``nodemedic.remediate.census``)."""
NODES_DIMENSIONS: Final = (CLUSTER_DIMENSION, NODE_GROUP_DIMENSION, "Status")

FORGED_DECISIONS_METRIC: Final = "ForgedDecisions"
"""Count (dimension Cluster only): 1 for each execution the remediation state machine
refused because no recorder of its source wrote the decision it was started with (a
``StartExecution`` by someone else than the classifier or the planned Lambda); its alarm
pages."""
