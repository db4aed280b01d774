"""One drain round: evict a node's pods through the Eviction API, so PodDisruptionBudgets
hold, and, when the round may ``force`` (before a replacement, where the cluster allows it),
delete whatever is left after the drain timeout.

The state machine calls a round again (with backoff while PDBs block) until ``done``. A
round that evicted pods waits up to ``settle_seconds`` for them to terminate, so a node
whose pods stop at once is drained in one round.
DaemonSet pods stay, as with ``kubectl drain``: their controller would put them straight
back and ignores the cordon. Mirror pods stay: the kubelet owns them, the API cannot
remove them.

A pod's drain policy (``lambdas.kube.drainpolicy``) may keep it a while (``waiting``):
finishing its work, or saving a checkpoint its job was asked for. A round given ``devices``
(a GPU-level repair) drains only the pods the node's device record says hold one of them;
the others keep running.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from lambdas.kube import drainpolicy
from lambdas.kube.devices import pods_holding

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_FIRST_LOOK = 0.1
"""Seconds between a settling round's first looks for the pods it evicted."""


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    owner_kind: str | None
    owner_name: str | None


@dataclass
class DrainRound:
    """``remaining`` counts pods still on the node after this round, evicted ones included
    until their termination finishes; ``pods`` lists the pods the round found, with the
    workload that owns each (the first round's list is the node's full set)."""

    done: bool = False
    remaining: int = 0
    evicted: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    """Pods their drain policy keeps for now (their grace not yet over)."""
    defaulted: list[str] = field(default_factory=list)
    """Pods whose ``nodemedic.io/drain-grace-seconds`` is no number of seconds, with the
    value: the default grace applied (each also told by an Event on the pod)."""
    pods: list[PodRef] = field(default_factory=list)


def drain(
    core: client.CoreV1Api,
    node: str,
    *,
    started_at: datetime.datetime,
    timeout_seconds: int,
    settle_seconds: float = 0,
    force: bool = False,
    devices: Sequence[str] | None = None,
    now: datetime.datetime | None = None,
) -> DrainRound:
    """``devices``: drain only the pods holding one of these (None: every pod)."""
    now = now or datetime.datetime.now(datetime.UTC)
    overdue = force and now >= started_at + datetime.timedelta(seconds=timeout_seconds)
    holders = None if devices is None else pods_holding(core, node, devices)
    found = _pods(core, node, holders)
    result = DrainRound()
    jobs: drainpolicy.Jobs = {}
    for pod in found:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        result.pods.append(pod_ref(pod))
        if overdue:
            _delete(core, pod)
            result.deleted.append(key)
            continue
        if pod.metadata.deletion_timestamp is not None:
            result.remaining += 1  # evicted earlier, still terminating
            continue
        verdict = drainpolicy.step(
            core,
            pod,
            jobs,
            node=node,
            started_at=started_at,
            timeout_seconds=timeout_seconds,
            now=now,
        )
        if verdict.ignored is not None:
            result.defaulted.append(f"{key}: {verdict.ignored[:64]!r}")
        outcome = "waiting" if verdict.step == "wait" else _evict(core, pod)
        if outcome != "gone":
            kept = {"waiting": result.waiting, "evicted": result.evicted, "blocked": result.blocked}
            kept[outcome].append(key)
            result.remaining += 1
    if result.remaining and not (result.blocked or result.waiting) and settle_seconds > 0:
        result.remaining = _settle(core, node, settle_seconds, holders)
    result.done = result.remaining == 0
    return result


def _pods(core: client.CoreV1Api, node: str, only: frozenset[str] | None) -> list[Any]:
    """The node's pods a drain acts on: not those that stay, and only ``only`` if given."""
    found = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    return [
        pod
        for pod in found
        if not _stays(pod)
        and (only is None or f"{pod.metadata.namespace}/{pod.metadata.name}" in only)
    ]


def _settle(core: client.CoreV1Api, node: str, seconds: float, only: frozenset[str] | None) -> int:
    """Pods still on ``node`` (those that stay aside) once they are all gone or ``seconds``
    have passed. Looks come every tenth of a second at first, for pods that stop at once,
    then further apart (a quarter of the time waited, at most a second, as ``kubectl
    drain`` waits) to keep the API server's load low."""
    began = time.monotonic()
    while True:
        left = len(_pods(core, node, only))
        waited = time.monotonic() - began
        if left == 0 or waited >= seconds:
            return left
        time.sleep(min(max(_FIRST_LOOK, waited / 4), 1.0, seconds - waited))


def pod_ref(pod: Any) -> PodRef:
    """The pod's controller (Job, ReplicaSet, StatefulSet, a training operator's kind):
    what has to be resumed once the node is back or replaced."""
    owners = pod.metadata.owner_references or []
    owner = next((o for o in owners if o.controller), owners[0] if owners else None)
    return PodRef(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        owner_kind=owner.kind if owner else None,
        owner_name=owner.name if owner else None,
    )


def _stays(pod: Any) -> bool:
    if MIRROR_ANNOTATION in (pod.metadata.annotations or {}):
        return True
    return any(o.controller and o.kind == "DaemonSet" for o in pod.metadata.owner_references or [])


def _evict(core: client.CoreV1Api, pod: Any) -> str:
    """``evicted``, ``blocked`` (HTTP 429: a PDB allows no disruption now) or ``gone``.

    An Eviction of ``policy/v1``: Kubernetes serves it since 1.22 and serves no other since
    1.25 (its beta was removed), and every version EKS supports today is a 1.3x.
    """
    body = client.V1Eviction(
        api_version="policy/v1",
        kind="Eviction",
        metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace),
    )
    try:
        core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, body)
    except client.ApiException as exc:
        if exc.status == 404:
            return "gone"
        if exc.status == 429:
            return "blocked"
        raise
    return "evicted"


def _delete(core: client.CoreV1Api, pod: Any) -> None:
    """Grace period 0: the drain timeout has already been the pods' grace."""
    try:
        core.delete_namespaced_pod(
            pod.metadata.name,
            pod.metadata.namespace,
            # In the body: the API server ignores query options when a body is sent.
            body=client.V1DeleteOptions(
                grace_period_seconds=0, preconditions={"uid": pod.metadata.uid}
            ),
        )
    except client.ApiException as exc:
        if exc.status not in (404, 409):  # gone, or a new pod took the name
            raise
