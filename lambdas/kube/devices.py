"""Which pods hold which devices: the Node's device record (``nodemedic.io/pod-devices``,
the kubelet's allocation as the node's agent publishes it), read by a GPU-level rung's
drain and by its search for the jobs to resume.

The record is written with the agent's token on its own Node, so it is read as untrusted
input: one too large or nested too deep to be the agent's (``{pod: [device, ...]}``, two
levels) is not parsed at all, and a record that cannot be read means every pod, as a
node-level repair drains. A 100,000-deep array would otherwise raise ``RecursionError`` in
the JSON parser and fail the drain round, stranding the node cordoned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from kubernetes import client

from nodemedic.contracts.kube import POD_DEVICES_KEY

MAX_RECORD_CHARS = 256 * 1024
"""The API server's limit on all of an object's annotations together: no record the agent
could publish is longer."""
MAX_DEPTH = 4
"""Nesting of arrays and objects read at most; the agent's record has two."""
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1}


def pods_holding(
    core: client.CoreV1Api, node: str, devices: Sequence[str]
) -> frozenset[str] | None:
    """``<namespace>/<pod>`` of the pods the Node's device record says hold one of
    ``devices``; None (every pod, as a node-level repair drains) when the Node has no record
    or one that cannot be read (docs/deploy.md, "Partial drain")."""
    record = parse_record((core.read_node(node).metadata.annotations or {}).get(POD_DEVICES_KEY))
    if not isinstance(record, dict):
        return None
    wanted = set(devices)
    return frozenset(
        pod
        for pod, held in record.items()
        if isinstance(held, list) and wanted.intersection(map(str, held))
    )


def parse_record(raw: str | None) -> Any:
    """The record's JSON; None when absent, too large, nested deeper than ``MAX_DEPTH``
    (counted before parsing, outside strings) or not JSON."""
    if not raw or len(raw) > MAX_RECORD_CHARS:
        return None
    brackets = (_DEPTH.get(c, 0) for c in _STRINGS.sub("", raw))
    if max(accumulate(brackets), default=0) > MAX_DEPTH:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
