"""RestartLatencySeconds: from a restart decision to every pod of the job running again.

Measured from the pods' own times (their Ready condition's last transition), so the figure
is exact to the second although the schedule reads it up to a minute after the fact: no
execution has to sit and poll the pods. A restart whose pods are not all running within
``WATCH_SECONDS`` is given up (no figure): a job that never comes back is the rules'
business (its start cut-off), not a latency.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

WATCH_SECONDS = 3600


@dataclass(frozen=True)
class PodSeen:
    uid: str
    phase: str
    running_since: float | None
    """Epoch seconds the pod became Ready, None while it is not."""


def running_again(replaced: Collection[str], pods: Sequence[PodSeen]) -> float | None:
    """Epoch seconds the last of the job's new pods ran; None while a pod is not running
    yet, a pod the restart replaces (by uid) is still there, or the job has no pod at all."""
    active = [p for p in pods if p.phase not in ("Succeeded", "Failed")]
    if not active or any(p.uid in replaced for p in active):
        return None
    if any(p.phase != "Running" or p.running_since is None for p in active):
        return None
    return max(p.running_since or 0.0 for p in active)


def restart_latency(
    decided_at: float, replaced: Collection[str], pods: Sequence[PodSeen]
) -> float | None:
    """Seconds from the decision to the last of the job's new pods running (None while
    they do not all run, as ``running_again``)."""
    running = running_again(replaced, pods)
    return None if running is None else max(0.0, running - decided_at)
