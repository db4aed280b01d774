"""The quarantine's settings (``nodemedic.remediate.quarantine``), declared as the cluster's
are and inherited by ``ClusterSettings``."""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic.remediate.quarantine import QuarantineRules
from nodemedic.settings.declare import setting


@dataclass(frozen=True, kw_only=True)
class QuarantineSettings:
    """How many faulty nodes may be cordoned at once, before the breaker admits their repair."""

    quarantine_group_percent: int = setting(0, minimum=0, maximum=100)
    """Quarantine ([Quarantine](#quarantine)): a node with a proven reset, reboot or replace fault
    is cordoned and tainted at once, before the breaker admits its repair; at most this share of
    its node group per `quarantine_window` (one node at least; 0: no quarantine, the node waits
    for the breaker untouched). One more is not cordoned, and the limit trips: a page and
    `QuarantineTripped`, whose alarm mails the topic. Off (0) until it is proven on every rung
    and scenario; NVIDIA NVSentinel's 50 suits most clusters."""
    quarantine_cluster_percent: int = setting(0, minimum=0, maximum=100)
    """... and at most this share of the cluster's Nodes per `quarantine_window` (0: no
    quarantine; NVSentinel's default is 50)."""
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
