"""One subscription batch (the lines of one node's stream) → decisions started.

Plain logic: the counter and the starter are passed in, so the same code runs in the
Lambda (DynamoDB, Step Functions) and in tests with in-memory stand-ins. It lives in
``remediate`` because it is where a classified line becomes a decision: it stands on the
classifier (``detect``) and on the decision record, and detection stands on neither.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, get_args

from nodemedic.catalog import Action, Rule, acted
from nodemedic.contracts.logs import DEEP_CHECK_PASSED_FAULT, split_signature
from nodemedic.detect.classifier import Classifier, Fault, unparsable_lines
from nodemedic.health.gpu_reset import gpu_of
from nodemedic.origin.signing import Proven, Unproven
from nodemedic.remediate.decision import (
    Decision,
    Identity,
    Stale,
    decide,
    distrusted,
    evidence,
    staleness,
)


@dataclass(frozen=True)
class LogEvent:
    event_id: str
    """CloudWatch Logs' id of the event: the same event delivered twice has the same id,
    but the same line stored twice has two (``line_id``)."""
    timestamp_ms: int
    message: str
    line: str = ""
    """The line's own name where the reader knows it: a backtest reads each line of a file
    as one line, however many share a second and a text (syslog stamps whole seconds)."""

    @property
    def line_id(self) -> str:
        """The line's own name: its timestamp and its text behind the signature (which the
        signature's MAC covers, so two copies of one signed line have one name). An agent
        that retries a PutLogEvents whose answer was lost, or drains its spool, makes
        CloudWatch store the line again under a new event id; a threshold counts lines."""
        if self.line:
            return self.line
        text = split_signature(self.message)[1]
        digest = hashlib.sha256(
            f"{self.timestamp_ms}\n{text}".encode("utf-8", "surrogatepass")
        ).digest()
        return base64.b64encode(digest[:12]).decode("ascii")


class HitCounter(Protocol):
    """Remembers a rule's recent hits on one node across batches and invocations."""

    def add(self, key: str, hits: Mapping[str, float], window: int) -> list[float]:
        """Store ``hits`` (``LogEvent.line_id`` -> time) and return the times of every
        distinct hit of ``key`` within ``window`` s of the last, oldest first."""
        ...


Starter = Callable[[Decision], bool]
"""Starts the remediation of a decision; False when it was already started."""
Origin = Callable[[LogEvent], Unproven | Proven]
"""Why an event is not proven to come from the instance whose stream holds it, or the boot
whose key proved it (``nodemedic.origin.signing.proof``)."""
ACTING: frozenset[str] = frozenset({"reset", "reboot", "replace"})
ADMITTING: frozenset[str] = frozenset({DEEP_CHECK_PASSED_FAULT})
"""Rules whose decision puts a node into service (its notify admits the node): their lines
need a proven origin as much as a replace does, and unproven where it is enforced, they are
dropped (the node stays tainted), since capping a notify to notify would change nothing."""


@dataclass(frozen=True)
class Unparsable:
    event_id: str
    reason: str
    evidence: str
    """The line as a decision's evidence would quote it: cut and escaped."""


@dataclass
class BatchResult:
    lines: int = 0
    faults: int = 0
    started: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    below_threshold: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    capped: list[str] = field(default_factory=list)
    """Decisions (started or not) of injected lines, notified instead of their rule's
    reboot or replace because the cluster does not accept injected faults, and of lines of
    the boot that died, which are only ever notified."""
    unproven: list[str] = field(default_factory=list)
    """Event ids of reboot or replace lines whose origin was not proven (capped to notify
    where the origin is enforced, counted either way)."""
    unverifiable: list[str] = field(default_factory=list)
    """Those of ``unproven`` whose origin could not be checked at all (``Unproven.forged``
    false): unsigned, or their instance's keys unknowable."""
    unparsable: list[Unparsable] = field(default_factory=list)
    """Lines that are not what their stream carries, left out of the classification."""
    stale: list[str] = field(default_factory=list)
    """Event ids of reset, reboot or replace lines heard more than ``stale_after`` after
    they were logged: at most notified, counted apart."""


@dataclass
class _Hits:
    fault: Fault
    times: dict[str, float]
    """``LogEvent.line_id`` -> time."""
    stale: Stale | None = None
    """The youngest of the group's stale lines, when they are stale."""

    def add(self, event: LogEvent, stale: Stale | None) -> None:
        self.times[event.line_id] = event.timestamp_ms / 1000
        if stale is not None and (self.stale is None or stale.age < self.stale.age):
            self.stale = stale


_Group = tuple[str, bool, bool, str | None, str | None, bool, str | None]
"""What a batch's hits are grouped by: the rule, injected and untrusted, of the boot that
died, why unproven, the boot that proved it, stale, and the GPU a reset acts on."""
_STRENGTH = {action: rank for rank, action in enumerate(get_args(Action))}


def _hit_key(identity: Identity, rule: Rule, untrusted: bool, unproven: bool, stale: bool) -> str:
    """Injected lines the cluster does not trust, lines of unproven origin and stale lines
    count apart: they never make up the threshold of a fresh kernel fault."""
    key = f"hits#{identity.cluster}#{identity.instance_id}#{rule.id}"
    if untrusted:
        return f"{key}#injected"
    if unproven:
        return f"{key}#unproven"
    return f"{key}#stale" if stale else key


def _proof(
    origin: Origin, fault: Fault, event: LogEvent, result: BatchResult, *, enforce: bool
) -> tuple[str | None, str | None]:
    """(why unproven where that caps it, the boot whose key proved an admitting line) of a
    line whose origin matters: a reset, reboot or replace, or an ``ADMITTING`` rule's. An
    unproven one is counted on ``result``, its reason kept only where ``enforce``."""
    admitting = fault.rule.id in ADMITTING
    if fault.rule.action not in ACTING and not admitting:
        return None, None
    found = origin(event)
    if isinstance(found, Unproven):
        result.unproven.append(event.event_id)
        if not found.forged:
            result.unverifiable.append(event.event_id)
        return (found.reason if enforce else None), None
    return None, (found.boot_id if admitting else None)


def process_batch(
    identity: Identity,
    events: Sequence[LogEvent],
    *,
    classifier: Classifier,
    counter: HitCounter,
    start: Starter,
    dedup_window: int,
    accept_injected: bool = False,
    origin: Origin | None = None,
    enforce_origin: bool = True,
    gpu_reset: bool = False,
    heard_at: float | None = None,
    stale_after: int | None = None,
) -> BatchResult:
    """Classify every line and start at most one remediation: the strongest action among
    the rules that fired (the earliest on a tie); the others are reported as superseded.

    One node gets one remediation at a time, so a GPU that falls off the bus, which logs
    both an Xid 79 and "GPU has fallen off the bus", is replaced once, not raced twice.
    Lines marked injected are at most notified unless ``accept_injected``, and are counted
    apart from kernel lines of the same rule, so they can neither act on the node nor take
    the place of a kernel fault's decision. Lines of the boot that died (pstore) are
    grouped apart and only notified, but their hits count towards the rule's threshold
    with the new boot's kernel lines: a fault that comes back after the reboot escalates.
    ``origin`` (None: not checked) proves each reboot or replace line that nothing else
    caps, and each line of an ``ADMITTING`` rule; where ``enforce_origin``, an unproven one
    is at most notified, with the reason, and counted apart (an admitting one is dropped).
    An admitting line's decision names the boot whose key proved it (``key_boot_id``): a
    pass signed by a boot that is over must not admit the rebooted node.
    A threshold counts distinct lines (``LogEvent.line_id``), not deliveries or copies. A
    line that is not what its stream carries (``unparsable_lines``) is reported and has no
    fault; the others are classified as if it were not there.
    A GPU reset is a reboot unless the cluster's ``gpu_reset`` is on; on, the lines of a
    reset rule group by the GPU they name, each GPU's fault a decision of its own.
    A reset, reboot or replace line logged more than ``stale_after`` seconds before the
    batch was ``heard_at`` (epoch seconds; None: no age is checked) is at most notified,
    with its age, and counted apart: a replayed or late line says nothing of the node now.
    """
    result = BatchResult(lines=len(events))
    by_rule: dict[_Group, _Hits] = {}
    messages = [split_signature(event.message)[1] for event in events]
    result.unparsable = [
        Unparsable(events[index].event_id, why, evidence(messages[index]))
        for index, why in unparsable_lines(messages, identity.source)
    ]
    for index, fault in classifier.classify_lines(messages, identity.source):
        result.faults += 1
        event = events[index]
        untrusted = distrusted(fault, accept_injected)
        admitting = fault.rule.id in ADMITTING
        why, boot = None, None
        if origin is not None and not (untrusted or fault.previous_boot):
            why, boot = _proof(origin, fault, event, result, enforce=enforce_origin)
        if why is not None and admitting:
            continue
        acting = fault.rule.action in ACTING
        stale = staleness(event.timestamp_ms, heard_at, stale_after) if acting else None
        if stale is not None:
            result.stale.append(event.event_id)
        resets = acted(fault.rule.action, gpu_reset=gpu_reset) == "reset"
        gpu = gpu_of(fault.line) if resets else None
        key = (fault.rule.id, untrusted, fault.previous_boot, why, boot, stale is not None, gpu)
        by_rule.setdefault(key, _Hits(fault=fault, times={})).add(event, stale)
    decisions: list[tuple[Decision, float]] = []
    for (rule_id, untrusted, _, why, boot, stale_hits, _), hits in by_rule.items():
        rule = hits.fault.rule
        times = sorted(hits.times.values())
        if rule.threshold is not None:
            hit_key = _hit_key(identity, rule, untrusted, why is not None, stale_hits)
            times = counter.add(hit_key, hits.times, rule.threshold.window)
            if len(times) < rule.threshold.count:
                result.below_threshold.append(rule_id)
                continue
        decision = decide(
            hits.fault,
            identity,
            first_seen=datetime.fromtimestamp(times[0], tz=UTC),
            count=len(times),
            window=dedup_window,
            accept_injected=accept_injected,
            unproven=why,
            gpu_reset=gpu_reset,
            key_boot_id=boot,
            stale=hits.stale,
        )
        if decision is None:
            continue
        if decision.action != acted(rule.action, gpu_reset=gpu_reset):
            result.capped.append(decision.decision_id)
        decisions.append((decision, times[0]))
    if not decisions:
        return result
    decisions.sort(key=lambda pair: (-_STRENGTH[pair[0].action], pair[1]))
    (strongest, _), *rest = decisions
    result.superseded = [d.decision_id for d, _ in rest]
    (result.started if start(strongest) else result.duplicates).append(strongest.decision_id)
    return result
