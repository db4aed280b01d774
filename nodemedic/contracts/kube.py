"""What nodemedic writes on Nodes (labels, taints, conditions, annotations) and who it is on
the Kubernetes API."""

from __future__ import annotations

from typing import Final, Literal, get_args

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
    "reset": "Unschedulable",
    "reboot": "UnschedulablePendingReboot",
    "replace": "UnschedulablePendingReplacement",
}
"""The health label a decision for each action (every one but ``ignore``) puts on its node.
A GPU reset (``gpu_reset``) takes the node out without a reboot to wait for: HyperPod's
labels have no value of their own for it."""
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
REQUESTED_BY_ANNOTATION: Final = "nodemedic.io/requested-by"
"""Who asked for a node's reboot or replacement by its health label: the chart's admission
policy (``nodemedic-label-requests``) admits a request only where this names its writer as
the API server authenticated it, so the request reconcile records it as who asked and
ignores a label without it."""
NODE_USER_PREFIX: Final = "system:node:"
"""A kubelet's user name on the API server (``system:node:<node name>``, group
``system:nodes``): a node never asks for a repair."""
MANUAL_CONDITION: Final = "NodeMedicManualRemediation"
"""Node condition, ``True`` while a remediation a person asked for works on the node (its
message says who asked and why), set back to ``False`` when the node is given back."""
FIELD_MANAGER: Final = "nodemedic"
"""The field manager nodemedic's kube Lambda writes Nodes as: the request reconcile tells a
health label a person set from one nodemedic set itself by the label's manager."""
MANUAL_SOURCE: Final = "manual"
"""The ``source`` of a decision a person asked for (``nodemedic reboot|replace``, or the
health label), instead of ``kmsg`` or ``health``."""
PLANNED_SOURCE: Final = "planned"
"""The ``source`` of a decision made of an AWS notice (a scheduled retirement or maintenance,
a Capacity Block's end, a Spot interruption): the repair is planned before the deadline."""
PLANNED_CONDITION: Final = "NodeMedicPlannedRemediation"
"""Node condition, ``True`` while a planned remediation works on the node (its message names
the notice and its deadline)."""
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
JOB_MONITOR_GROUP: Final = "nodemedic:job-monitor"
"""The Kubernetes group the job monitor acts as (lambdas/kube/rbac.yaml, the chart): it reads
pods and jobs, restarts a job's pods, marks jobs and writes their Events; it has no verb on
Nodes."""
DEEP_CHECK_LABEL: Final = "nodemedic.io/deep-health-check-status"
"""HyperPod's values: ``InProgress`` from registration until the deep check's verdict,
then ``Passed`` or ``Failed``."""
DeepCheckStatus = Literal["InProgress", "Passed", "Failed", "Unchecked"]
DEEP_CHECK_UNCHECKED: Final[DeepCheckStatus] = "Unchecked"
"""nodemedic's own value: a node a reboot held for its deep check and gave back with no
verdict after ``deep_check_timeout`` (its check never ran, could check nothing, or hung).
The reboot cleared its fault; keeping it out for a check that may never come would leave it
out of service for good."""
DEEP_CHECK_TAINT_KEY: Final = "nodemedic.io/health-check"
"""``nodemedic.io/health-check:NoSchedule``: put by the kubelet at registration
(``--register-with-taints``), removed once the node's deep check passed."""
DEEP_CHECK_SINCE_ANNOTATION: Final = "nodemedic.io/deep-check-since"
"""ISO 8601 UTC time nodemedic put the node behind the health-check taint (after a reboot);
a node without it waits since its creation. ``deep_check_timeout`` counts from either."""
DEEP_CHECK_HELD_ANNOTATION: Final = "nodemedic.io/held-for-deep-check"
"""``<decision_id>`` of the reboot that left the node cordoned until its deep check passes
(``post_reboot_deep_check``): only then does a pass uncordon the node as well."""
CORDONED_ANNOTATION: Final = "nodemedic.io/cordoned"
"""``true`` on a Node nodemedic cordoned itself: it was schedulable when nodemedic took it
out. Giving the node back lifts only that cordon; one an operator put there before (a node
cordoned for maintenance) stays (``lambdas.kube.nodes``)."""
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

# Drain policies (docs/deploy.md, "Drain policies") -------------------------------------------

DrainPolicy = Literal["immediate", "allow-completion", "checkpoint"]
"""How a drain treats a pod: ``immediate`` evicts it at once (the default, as before);
``allow-completion`` lets it run until it finishes or its grace ends; ``checkpoint`` asks its
job to checkpoint and evicts once the job's checkpoint line was logged or its grace ended."""
DRAIN_POLICIES: Final[tuple[DrainPolicy, ...]] = get_args(DrainPolicy)
DRAIN_POLICY_KEY: Final = "nodemedic.io/drain-policy"
"""A pod's label or annotation, or its job's annotation: one of ``DRAIN_POLICIES``. The pod's
own choice wins over its job's; an unknown value is ``immediate``."""
DRAIN_GRACE_KEY: Final = "nodemedic.io/drain-grace-seconds"
"""Beside the policy: how long the drain waits for the pod at most (seconds from the drain's
start). Absent, or longer than half of ``drain_timeout``, it is half of ``drain_timeout``:
the other half is for the evictions, so a policy never makes the drain time out. A value
that is no finite number of seconds >= 0 (``nan``, ``inf``, ``-4``, ``soon``) is the default,
told by a ``NodeMedicDrainGraceIgnored`` Event on the pod and the drain round's ``defaulted``."""
DRAIN_GRACE_EVENT_REASON: Final = "NodeMedicDrainGraceIgnored"
CHECKPOINT_RULE_KEY: Final = "nodemedic.io/checkpoint-rule"
"""On a job: the name of the rule of its ``logMonitoringConfiguration`` whose ``logPattern``
is the job's checkpoint line; ``checkpoint`` when absent."""
DEFAULT_CHECKPOINT_RULE: Final = "checkpoint"
CHECKPOINT_REQUESTED_ANNOTATION: Final = "nodemedic.io/checkpoint-requested"
"""ISO 8601 UTC time nodemedic asked the job to checkpoint before its pods are evicted: put
on the job and on its pods on the draining node (a downward API volume shows it to the job's
code), with a ``NodeMedicCheckpointRequested`` Event on the job."""
CHECKPOINT_SAVED_ANNOTATION: Final = "nodemedic.io/checkpoint-saved"
"""ISO 8601 UTC log time of the job's checkpoint line the job monitor saw after the request:
the drain evicts the job's pods once it is at or after the request."""
CHECKPOINT_EVENT_REASON: Final = "NodeMedicCheckpointRequested"
POD_DEVICES_KEY: Final = "nodemedic.io/pod-devices"
"""On a Node: ``{"<namespace>/<pod>": ["<device id>", ...]}``, JSON: the devices the kubelet
allocated to each pod, as its PodResources API lists them, published by the node's own
agent. A drain asked for ``devices`` evicts only the pods holding one of them."""
KUBE_UNAVAILABLE: Final = "KubeUnavailable"
"""The kube Lambda's error type when the API server refused a call as overloaded or broken
(HTTP 429, any 5xx: its priority and fairness shedding load, a failing admission webhook, an
upgrade) or could not be reached: the state machine retries it with backoff and full jitter
(``stacks/remediation/kit/flow.py``), not once as other errors."""
