"""Hearing silence: which Ready nodes' agents stopped shipping, and which of them to tell
people about now.

The classifier records when it last heard each node's heartbeat (``heard_at``); the
reconcile lists the Ready Nodes and calls a node silent once ``SILENT_AFTER_BEATS``
heartbeat intervals passed without one, counting from the later of its last heartbeat and
the time the Node became Ready (a node that just joined, or came back, gets the same
allowance). A silent node is notified once per silence: the mark (``notified_at``) goes
when the agent is heard again. Plain logic; the kube Lambda's ``silent`` op does the I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodemedic.contracts.logs import (
    HEARTBEAT_SECONDS,
    SILENT_AFTER_BEATS,
    parse_heartbeat,
    split_signature,
)

HEARD_AT = "heard_at"
AGENT_STATE = "agent_state"
NOTIFIED_AT = "notified_at"
"""The attributes of a ``HEARTBEAT_PK`` ledger item."""


@dataclass(frozen=True)
class ReadyNode:
    node: str
    instance_id: str
    ready_since: float
    """Epoch seconds of the Ready condition's last transition."""


@dataclass(frozen=True)
class Heard:
    heard_at: float | None = None
    notified: bool = False
    state: Mapping[str, int] = field(default_factory=dict)
    """What the last heartbeat said (the agent's counters): its last known state."""


@dataclass(frozen=True)
class Silent:
    node: str
    instance_id: str
    last_heard: float | None
    """Epoch seconds, or None when this node's agent was never heard."""
    state: Mapping[str, int]
    new: bool
    """Not notified yet for this silence."""
    since: float = 0.0
    """Epoch seconds its silence began: its last heartbeat, or becoming Ready if later."""


def interval_of(state: Mapping[str, int]) -> int:
    """The heartbeat interval the agent said it keeps (``HEARTBEAT_SECONDS`` if unsaid)."""
    return max(1, state.get("interval", HEARTBEAT_SECONDS))


def silent_nodes(
    ready: Iterable[ReadyNode], heard: Mapping[str, Heard], now: float
) -> list[Silent]:
    """The Ready nodes unheard for ``SILENT_AFTER_BEATS`` of their agent's intervals, the
    newest silence first (then by node name): a list cut to a size shows the silences an
    operator has not yet seen before the ones they have lived with."""
    found = []
    for node in ready:
        seen = heard.get(node.instance_id, Heard())
        since = max(node.ready_since, seen.heard_at or 0.0)
        if now - since >= SILENT_AFTER_BEATS * interval_of(seen.state):
            found.append(
                Silent(
                    node.node,
                    node.instance_id,
                    seen.heard_at,
                    seen.state,
                    not seen.notified,
                    since,
                )
            )
    return sorted(found, key=lambda s: (-s.since, s.node))


def newest_heartbeat(messages: Sequence[str]) -> Mapping[str, int] | None:
    """The state of the last heartbeat among a batch's lines, if any (behind the agent's
    signature, which a heartbeat needs no proof of: a forged one can only hide silence,
    the threat ``docs/security.md`` names)."""
    for message in reversed(messages):
        state = parse_heartbeat(split_signature(message)[1])
        if state is not None:
            return state
    return None


class Recent:
    """When this process last recorded each node's heartbeat: a spool drained after an
    outage delivers many heartbeats at once, and one write per half interval is enough."""

    def __init__(self) -> None:
        self._written: dict[str, float] = {}

    def due(self, instance_id: str, now: float, interval: float) -> bool:
        return now - self._written.get(instance_id, float("-inf")) >= interval / 2

    def written(self, instance_id: str, now: float) -> None:
        self._written[instance_id] = now
