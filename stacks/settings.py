"""Per-cluster settings, read from the CDK context key ``nodemedic:clusters``.

Every safety knob has its default here, next to its name, so the README and the stack can
quote one place (as medik8s does for its health-check API).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

CONTEXT_KEY = "nodemedic:clusters"
RecoveryMode = Literal["Automatic", "None"]
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")


@dataclass(frozen=True)
class ClusterSettings:
    """One monitored cluster and how far nodemedic may act on it."""

    name: str
    """Short name used in resource names and the log group ``/nodemedic/<name>/nodes``."""
    eks_cluster_name: str = ""
    """The EKS cluster the Kubernetes Lambda talks to (defaults to ``name``)."""
    node_groups: tuple[str, ...] = ()
    """Auto Scaling group names nodemedic may reboot or replace instances of."""
    recovery_mode: RecoveryMode = "Automatic"
    """``None`` = monitor only: label and condition, no cordon, no reboot or replace."""
    dry_run: bool = False
    """Record and notify what would be done, change nothing on nodes or instances."""
    max_unhealthy_percent: int = 20
    """Breaker: no new action while more than this share of a node group is in remediation."""
    max_parallel: int = 2
    """Breaker: at most this many nodes of a node group in remediation at once."""
    drain_timeout: int = 600
    """Seconds of Eviction-API draining before the remaining pods are deleted."""
    reboot_timeout: int = 900
    """Seconds to wait for the node to come back Ready with a new boot id before replacing."""
    escalation_window: int = 3600
    """The same fault again within this many seconds after a reboot escalates to replace."""
    breaker_hold: int = 3600
    """Seconds a decision held by the breaker keeps waiting for a free slot before giving up."""
    poll_seconds: int = 15
    """Interval of the state machine's wait loops (drain retries, reboot watch, breaker)."""
    log_retention_days: int = 30
    notification_emails: tuple[str, ...] = ()

    @property
    def log_group_name(self) -> str:
        return f"/nodemedic/{self.name}/nodes"

    @property
    def kube_cluster(self) -> str:
        return self.eks_cluster_name or self.name


def parse_cluster(raw: Mapping[str, Any]) -> ClusterSettings:
    """Validate one context entry; a typo in a safety knob must fail the synth, not be ignored."""
    known = {f.name for f in fields(ClusterSettings)}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"unknown cluster setting(s): {', '.join(sorted(unknown))}")
    values: dict[str, Any] = dict(raw)
    for key in ("node_groups", "notification_emails"):
        if key in values:
            values[key] = tuple(values[key])
    settings = ClusterSettings(**values)
    if not _NAME.match(settings.name):
        raise ValueError(f"cluster name {settings.name!r} must match {_NAME.pattern}")
    if settings.recovery_mode not in ("Automatic", "None"):
        raise ValueError(f"recovery_mode must be Automatic or None, not {settings.recovery_mode!r}")
    if not 0 <= settings.max_unhealthy_percent <= 100:
        raise ValueError("max_unhealthy_percent must be within 0..100")
    for key in ("max_parallel", "drain_timeout", "reboot_timeout", "poll_seconds"):
        if getattr(settings, key) < 1:
            raise ValueError(f"{key} must be at least 1")
    return settings


def parse_clusters(raw: Sequence[Mapping[str, Any]] | None) -> list[ClusterSettings]:
    clusters = [parse_cluster(entry) for entry in raw or ()]
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        raise ValueError("cluster names must be unique")
    return clusters
