"""History → what the pipeline would have done, in simulated time.

Each node's lines are classified in bulk (the classifier's needle prefilter passes over
the clean ones at C speed); only the fault lines go on, in the batches the agent would
have shipped (a batch spans at most ``BATCH_SECONDS``), to ``process_batch``, the classify
Lambda's own logic: thresholds per rule on a hit counter, at most one decision per node and
batch, the caps on injected and previous-boot lines, the execution name as deduplication.
Each decision it starts runs ``machine.Machine``'s remediation. Deliveries and the
remediations' waits are events on one clock taken from the lines' timestamps.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import count as counter

from console.backtest.machine import Machine, Steps
from console.backtest.read import Event, History
from console.backtest.run import Outcome
from nodemedic.catalog import Source
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.classifier import Classifier
from nodemedic.remediate.batch import LogEvent, process_batch
from nodemedic.remediate.decision import DEFAULT_WINDOW, Decision, Identity, recent
from nodemedic.remediate.hyperpod import hyperpod_origin
from nodemedic.remediate.policy import Group
from nodemedic.remediate.target import Target
from nodemedic.settings import ClusterSettings

BATCH_SECONDS = 1.0
"""The agent ships a line at most a second after it arrives: one batch spans no more."""
ACTION_SECONDS = 300
"""What a reboot or a replacement takes in the replay (drain, reboot, boot): a guess, not a
rule of the pipeline; ``--action-seconds`` sets it."""
_INSTANCE_CHARS = frozenset("0123456789abcdef")


def instance_of(node: str) -> str:
    """The instance id a decision names: the node's own where it is one, else a stand-in
    derived from its name (a file named after a host)."""
    if node.startswith("i-") and 8 <= len(node) - 2 <= 17 and set(node[2:]) <= _INSTANCE_CHARS:
        return node
    return "i-" + hashlib.sha256(node.encode()).hexdigest()[:17]


@dataclass
class Seen:
    """One fault on one node, as the lines show it."""

    node: str
    fault_id: str
    action: str
    """The rule's action."""
    threshold: bool
    """The rule acts only on a number of lines within a window."""
    lines: int = 0
    first_at: float = 0.0
    last_at: float = 0.0


@dataclass
class Replay:
    """What the replay found: every fault seen and every decision's outcome."""

    settings: ClusterSettings
    group: Group
    lines: int
    nodes: list[str]
    """Every node of the history, healthy ones too."""
    target: Target
    """Who repairs the group's nodes, as far as its name tells."""
    seen: dict[tuple[str, str], Seen] = field(default_factory=dict)
    outcomes: list[tuple[str, Outcome]] = field(default_factory=list)
    """(node, outcome), in the order the decisions were started."""


class _Hits:
    """The classifier's hit counter (``lambdas.classify.aws.DynamoHitCounter``) in memory."""

    def __init__(self) -> None:
        self._hits: dict[str, dict[str, float]] = {}

    def add(self, key: str, hits: Mapping[str, float], window: int) -> list[float]:
        kept = recent({**self._hits.get(key, {}), **hits}, window)
        self._hits[key] = kept
        return list(kept.values())


def _batches(events: list[Event]) -> list[list[Event]]:
    """Fault lines in the batches the agent would ship them in."""
    batches: list[list[Event]] = []
    for event in events:
        if batches and event.at - batches[-1][0].at <= BATCH_SECONDS:
            batches[-1].append(event)
        else:
            batches.append([event])
    return batches


def _fault_events(
    replay: Replay, classifier: Classifier, node: str, source: Source, events: list[Event]
) -> list[Event]:
    """The stream's fault lines, each fault counted on the node."""
    events.sort(key=_at)
    found = []
    for index, fault in classifier.classify_lines([e.message for e in events], source):
        event = events[index]
        seen = replay.seen.get((node, fault.fault_id))
        if seen is None:
            threshold = fault.rule.threshold is not None
            seen = Seen(node, fault.fault_id, fault.action, threshold, first_at=event.at)
            replay.seen[(node, fault.fault_id)] = seen
        seen.lines += 1
        seen.last_at = event.at
        found.append(event)
    return found


def _at(event: Event) -> float:
    return event.at


def _heard_at(batch: list[Event]) -> float:
    """When the classifier hears a batch: as its last line is shipped, or, where the
    history says CloudWatch Logs took a line in later (a node that shipped late), then."""
    return max([batch[-1].at, *(e.ingested for e in batch if e.ingested is not None)])


def replay(
    history: History,
    classifier: Classifier,
    settings: ClusterSettings,
    *,
    group: str | None = None,
    group_size: int | None = None,
    action_seconds: int = ACTION_SECONDS,
) -> Replay:
    """Replay ``history`` on a cluster with ``settings``. Every node is taken to be in one
    node group: ``group`` (default the first of ``node_groups``, else one nodemedic may not
    act on) of ``group_size`` nodes (default the nodes in the history)."""
    nodes = {node for node, _ in history.streams}
    name = group or (settings.node_groups[0] if settings.node_groups else "unlisted")
    result = Replay(
        settings,
        Group(name, group_size or len(nodes)),
        history.lines,
        sorted(nodes),
        target=settings.target_by_name(name),
    )
    machine = Machine(settings, result.group, action_seconds, result.target)
    clock: list[tuple[float, int, Steps | tuple[str, Source, list[Event]]]] = []
    order = counter()
    for (node, source), events in sorted(history.streams.items()):
        for batch in _batches(_fault_events(result, classifier, node, source, events)):
            clock.append((_heard_at(batch), next(order), (node, source, batch)))
    heapq.heapify(clock)
    hits, started = _Hits(), set[str]()
    while clock:
        at, _, due = heapq.heappop(clock)
        if not isinstance(due, tuple):
            _advance(clock, order, due, int(at))
            continue
        decisions = _deliver(settings, classifier, hits, started, due, heard_at=at)
        node = due[0]
        for decision in decisions:
            outcome = Outcome(decision, int(at))
            result.outcomes.append((node, outcome))
            _advance(clock, order, machine.run(decision, int(at), outcome), None)
    return result


def _deliver(
    settings: ClusterSettings,
    classifier: Classifier,
    hits: _Hits,
    started: set[str],
    delivery: tuple[str, Source, list[Event]],
    *,
    heard_at: float,
) -> list[Decision]:
    """One subscription batch, heard at ``heard_at``, through the classify Lambda's logic;
    the decisions it started (an execution name met before is a duplicate, as Step
    Functions says)."""
    node, source, batch = delivery
    decisions: list[Decision] = []

    def start(decision: Decision) -> bool:
        if decision.decision_id in started:
            return False
        started.add(decision.decision_id)
        decisions.append(decision)
        return True

    process_batch(
        Identity(settings.name, instance_of(node), source),
        [LogEvent(e.event_id, int(e.at * 1000), e.message, e.event_id) for e in batch],
        classifier=classifier,
        counter=hits,
        start=start,
        dedup_window=DEFAULT_WINDOW,
        accept_injected=settings.accept_injected_faults,
        # HyperPod's events are never proven: capped as the classifier caps them by default.
        origin=hyperpod_origin if source == HYPERPOD_SOURCE else None,
        enforce_origin=settings.proof_of_origin == "enforce",
        gpu_reset=settings.gpu_reset,
        heard_at=heard_at,
        stale_after=settings.stale_after,
    )
    return decisions


def _advance(
    clock: list[tuple[float, int, Steps | tuple[str, Source, list[Event]]]],
    order: itertools.count[int],
    steps: Steps,
    now: int | None,
) -> None:
    """Run a remediation until it waits; put its wake-up on the clock."""
    try:
        wake = next(steps) if now is None else steps.send(now)
    except StopIteration:
        return
    heapq.heappush(clock, (wake, next(order), steps))
