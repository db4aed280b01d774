"""Container Insights' application log records → the job and the line.

Fluent Bit (the Container Insights DaemonSet) ships each line a container writes as one
JSON record: the line under ``log``, the pod under ``kubernetes`` (``pod_name``,
``namespace_name``, ``labels``, ...). A record names its pod; which job the pod belongs to
is the cluster's word (its controller owner reference, lambdas/kube/owners.py), never the
record's labels, which any pod can set. The labels only pass over the records of pods that
claim no job (the group holds every pod's output), so those cost no API call; a record that
is not Fluent Bit's JSON is skipped the same way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from nodemedic.contracts.jobs import JOB_NAME_LABELS

_DECODER: Final = json.JSONDecoder()
MAX_LINE_CHARS = 8192
"""Rules see at most this much of a line (a regex over megabytes of one line would stall a
delivery)."""


@dataclass(frozen=True, slots=True)
class PodLine:
    namespace: str
    pod: str
    line: str


def pod_line(message: str) -> PodLine | None:
    """The line a Container Insights record carries, and its pod; None for a record of a pod
    that claims no job."""
    record = _decoded(message)
    meta = record.get("kubernetes") if isinstance(record, dict) else None
    line = record.get("log") if isinstance(record, dict) else None
    if not isinstance(meta, dict) or not isinstance(line, str):
        return None
    labels = meta.get("labels")
    claimed = _job_name(labels) if isinstance(labels, dict) else None
    namespace, pod = meta.get("namespace_name"), meta.get("pod_name")
    if not claimed or not isinstance(namespace, str) or not isinstance(pod, str):
        return None
    return PodLine(namespace, pod, _encodable(line.rstrip("\n")[:MAX_LINE_CHARS]))


def _encodable(line: str) -> str:
    """The line with any lone surrogate (JSON's escape of half a UTF-16 pair decodes to one)
    made a ``?``: the rules' RE2 reads UTF-8, and a line it cannot encode would fail the
    whole delivery, every other pod's lines with it."""
    if line.isascii():
        return line
    return line.encode("utf-8", "replace").decode("utf-8")


def _decoded(message: str) -> object:
    """The record's JSON value; None when the message is no JSON. ``raw_decode`` first, as it
    costs a quarter less than ``json.loads`` (bench.jobs), whose only difference is that it
    allows whitespace around the value: a message with any gets ``json.loads``' verdict."""
    try:
        value, end = _DECODER.raw_decode(message)
    except ValueError:
        end = -1
    if end == len(message):
        return value
    try:
        return json.loads(message)
    except ValueError:
        return None


def _job_name(labels: dict[str, object]) -> str | None:
    """The first of the job-name labels the pod carries (a loop: this runs on every record
    of the group, and a generator per record cost more than the lookups)."""
    for key in JOB_NAME_LABELS:
        name = labels.get(key)
        if isinstance(name, str):
            return name
    return None


def lines_by_pod(
    records: Iterable[tuple[float, str]],
) -> dict[tuple[str, str], list[tuple[float, str]]]:
    """``(time, message)`` records of a delivery as each pod's ``(time, line)``, keyed by
    ``(namespace, pod)``, in delivery order; records of pods that claim no job left out."""
    by_pod: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for at, message in records:
        line = pod_line(message)
        if line is not None:
            by_pod[line.namespace, line.pod].append((at, line.line))
    return by_pod
