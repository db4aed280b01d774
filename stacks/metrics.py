"""nodemedic's own metrics, namespace ``NodeMedic``: the names the state machine
(stacks/remediation.py) and the classifier (Powertools, embedded metric format) publish and
the alarms and the dashboard read. Every state-machine metric carries the dimensions
``Cluster`` and ``NodeGroup``.
"""

from __future__ import annotations

METRICS_NAMESPACE = "NodeMedic"

REMEDIATIONS_METRIC = "Remediations"
"""Count, one per finished execution, with the extra dimensions ``Action`` (notify, reboot
or replace, after escalation) and ``Outcome`` (notified, monitored, rebooted, replaced,
held, failed, ...)."""
REMEDIATION_SECONDS_METRIC = "RemediationSeconds"
"""Seconds from the decision's arrival to its outcome."""
FAULT_TO_ACTION_METRIC = "FaultToActionSeconds"
"""Seconds from the fault line's timestamp (``first_seen``) to the first change on the node."""
IN_REMEDIATION_METRIC = "InRemediation"
"""Gauge (Count): nodes of the node group holding a breaker slot, published on every admit
and release."""
BREAKER_METRIC = "BreakerHeld"
"""Count, each time the breaker holds a decision back."""
REMEDIATION_EXTRA_DIMENSIONS = ("Action", "Outcome")
"""Dimensions of REMEDIATIONS_METRIC besides Cluster and NodeGroup."""

CLASSIFIER_METRICS = ("LinesClassified", "FaultsFound", "DecisionsStarted")
"""Published by the classifier with the dimensions ``Cluster`` and ``service``."""
