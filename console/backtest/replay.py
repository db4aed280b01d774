"""History → what the pipeline would have done, in simulated time.

The history's events come in time order and are classified a chunk at a time (the
classifier's needle prefilter passes over the clean ones at C speed); only the fault lines
go on, in the batches the agent would
have shipped (a batch spans at most ``BATCH_SECONDS``), to ``process_batch``, the classify
Lambda's own logic: thresholds per rule on a hit counter, at most one decision per node and
batch, the caps on injected and previous-boot lines, the execution name as deduplication.
Each decision it starts runs ``machine.Machine``'s remediation. Deliveries and the
remediations' waits are events on one clock taken from the lines' timestamps, run as the
history is read: a delivery or wake-up is run once no batch still to come can be heard
before it, so the replay holds what the rules need, not the history.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import count, islice
from typing import Protocol

from console.backtest.machine import Machine, Steps
from console.backtest.read import Event, Stream, TimedEvent
from console.backtest.run import Outcome
from nodemedic.catalog import Source
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.classifier import Classifier, Fault
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
_CHUNK = 1024
"""Events classified at a time."""


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


Delivery = tuple[str, Source, list[Event]]
"""One subscription batch of a node's stream."""
Due = tuple[float, int, object, "Steps | Delivery"]
"""What the clock holds: (when, 0 for a delivery or 1 for a wake-up, then the stream and
batch number of a delivery or the order a wake-up was set in, what is due). A delivery
goes before a wake-up of the same time, and deliveries of one time by stream."""


class Timeline(Protocol):
    """A history to replay: its events in time order (``History``, ``files.Files``)."""

    lines: int
    refused: list[str]
    """Why each file that could not be read was left out."""

    def nodes(self) -> set[str]: ...

    def events(self) -> Iterator[TimedEvent]: ...


@dataclass
class _Batch:
    stream: Stream
    number: int
    events: list[Event]


def _faults(
    events: Iterator[TimedEvent], classifier: Classifier
) -> Iterator[tuple[Stream, Event, Fault]]:
    """The fault events, in order; classified a chunk at a time, each source's lines as
    one text, as ``Classifier.classify_lines`` does a stream's."""
    while chunk := list(islice(events, _CHUNK)):
        by_source: dict[Source, list[int]] = {}
        for number, ((_, source), _) in enumerate(chunk):
            by_source.setdefault(source, []).append(number)
        found: dict[int, Fault] = {}
        for source, numbers in by_source.items():
            messages = [chunk[n][1].message for n in numbers]
            for index, fault in classifier.classify_lines(messages, source):
                found[numbers[index]] = fault
        for number in sorted(found):
            stream, event = chunk[number]
            yield stream, event, found[number]


def _heard_at(batch: list[Event]) -> float:
    """When the classifier hears a batch: as its last line is shipped, or, where the
    history says CloudWatch Logs took a line in later (a node that shipped late), then."""
    return max([batch[-1].at, *(e.ingested for e in batch if e.ingested is not None)])


def _seen(
    streams: Mapping[Stream, Mapping[str, Seen]],
) -> dict[tuple[str, str], Seen]:
    """Each node's faults over its streams, as counted stream after stream in their order:
    first seen in the first stream that has it, last in the last."""
    found: dict[tuple[str, str], Seen] = {}
    for (node, _), faults in sorted(streams.items()):
        for fault_id, seen in faults.items():
            total = found.get((node, fault_id))
            if total is None:
                found[(node, fault_id)] = dataclasses.replace(seen)
            else:
                total.lines += seen.lines
                total.last_at = seen.last_at
    return found


@dataclass
class _Clock:
    """Deliveries and the remediations' wake-ups, run in time order as the history is read:
    what is due before ``horizon`` (no delivery still to come is heard before it)."""

    settings: ClusterSettings
    classifier: Classifier
    machine: Machine
    result: Replay
    due: list[Due] = field(default_factory=list)
    order: Iterator[int] = field(default_factory=count)
    hits: _Hits = field(default_factory=_Hits)
    started: set[str] = field(default_factory=set)

    def deliver(self, batch: _Batch) -> None:
        node, source = batch.stream
        key = (batch.stream, batch.number)
        heapq.heappush(self.due, (_heard_at(batch.events), 0, key, (node, source, batch.events)))

    def run(self, horizon: float) -> None:
        while self.due and self.due[0][0] < horizon:
            at, _, _, due = heapq.heappop(self.due)
            if not isinstance(due, tuple):
                self._advance(due, int(at))
                continue
            decisions = _deliver(
                self.settings, self.classifier, self.hits, self.started, due, heard_at=at
            )
            for decision in decisions:
                outcome = Outcome(decision, int(at))
                self.result.outcomes.append((due[0], outcome))
                self._advance(self.machine.run(decision, int(at), outcome), None)

    def _advance(self, steps: Steps, now: int | None) -> None:
        """Run a remediation until it waits; put its wake-up on the clock."""
        try:
            wake = next(steps) if now is None else steps.send(now)
        except StopIteration:
            return
        heapq.heappush(self.due, (wake, 1, next(self.order), steps))


def replay(
    history: Timeline,
    classifier: Classifier,
    settings: ClusterSettings,
    *,
    group: str | None = None,
    group_size: int | None = None,
    action_seconds: int = ACTION_SECONDS,
) -> Replay:
    """Replay ``history`` on a cluster with ``settings``. Every node is taken to be in one
    node group: ``group`` (default the first of ``node_groups``, else one nodemedic may not
    act on) of ``group_size`` nodes (default the nodes in the history).

    The history is read once, in time order, and only what the rules need is kept: each
    stream's open batch (a second of its fault lines), the faults seen per node, the
    remediations in flight and the ledger."""
    nodes = history.nodes()
    name = group or (settings.node_groups[0] if settings.node_groups else "unlisted")
    result = Replay(
        settings,
        Group(name, group_size or len(nodes)),
        history.lines,
        sorted(nodes),
        target=settings.target_by_name(name),
    )
    machine = Machine(settings, result.group, action_seconds, result.target)
    clock = _Clock(settings, classifier, machine, result)
    batches: dict[Stream, _Batch] = {}
    opened: deque[_Batch] = deque()
    """Open batches, oldest first (a closed one is passed over)."""
    seen: dict[Stream, dict[str, Seen]] = {}
    for stream, event, fault in _faults(history.events(), classifier):
        while opened and event.at - opened[0].events[0].at > BATCH_SECONDS:
            _close(clock, batches, opened.popleft())
        batch = batches.get(stream)
        if batch is not None and event.at - batch.events[0].at <= BATCH_SECONDS:
            batch.events.append(event)
        else:
            if batch is not None:
                _close(clock, batches, batch)
            batch = _Batch(stream, 0 if batch is None else batch.number + 1, [event])
            batches[stream] = batch
            opened.append(batch)
        _count(seen.setdefault(stream, {}), stream[0], fault, event)
        clock.run(opened[0].events[0].at)
    for batch in list(batches.values()):
        _close(clock, batches, batch)
    clock.run(float("inf"))
    result.seen = _seen(seen)
    return result


def _close(clock: _Clock, batches: dict[Stream, _Batch], batch: _Batch) -> None:
    """Ship a batch no later line can join, once."""
    if batches.get(batch.stream) is batch:
        del batches[batch.stream]
        clock.deliver(batch)


def _count(seen: dict[str, Seen], node: str, fault: Fault, event: Event) -> None:
    """A fault line of a stream, counted."""
    found = seen.get(fault.fault_id)
    if found is None:
        threshold = fault.rule.threshold is not None
        found = Seen(node, fault.fault_id, fault.action, threshold, first_at=event.at)
        seen[fault.fault_id] = found
    found.lines += 1
    found.last_at = event.at


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
