"""The quarantine's settings (``nodemedic.remediate.quarantine``), declared as the cluster's
are and inherited by ``ClusterSettings``."""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic.remediate.quarantine import QuarantineRules
from nodemedic.settings.declare import setting


@dataclass(frozen=True, kw_only=True)
class QuarantineSettings:
    """How many faulty nodes may be cordoned at once, before the breaker admits their repair."""

    quarantine_group_percent: int = setting(50, minimum=0, maximum=100)
    """Quarantine ([Quarantine](#quarantine)): a node with a proven reset, reboot or replace fault
    is cordoned and tainted at once, before the breaker admits its repair; at most this share of
    its node group per `quarantine_window` (one node at least; 0: no quarantine, the node waits
    for the breaker untouched). One more is not cordoned, and the limit trips: a page and
    `QuarantineTripped`, whose alarm mails the topic. 50: the share at which one fault on a
    group is judged a fleet event (`fleet_min_percent`), so distinct faults on more of a group
    within minutes, more likely a shared cause than failing hardware, are not cordoned; and
    NVIDIA NVSentinel's default. The cordon evicts nothing: a wrong one costs new pods a place,
    never a running one."""
    quarantine_cluster_percent: int = setting(50, minimum=0, maximum=100)
    """... and at most this share of the cluster's Nodes per `quarantine_window` (0: no
    quarantine). 50: NVIDIA NVSentinel's default (50 % of the nodes in 5 minutes), which
    leaves half the cluster schedulable however many groups a storm spans (a storm in one
    group meets its group's share first)."""
    quarantine_window: int = setting(300, minimum=1)
    """Seconds of one quarantine window (NVIDIA NVSentinel's default: 50 % of the nodes in 5
    minutes)."""

    @property
    def quarantine_rules(self) -> QuarantineRules:
        return QuarantineRules(
            group_percent=self.quarantine_group_percent,
            cluster_percent=self.quarantine_cluster_percent,
            window=self.quarantine_window,
        )
