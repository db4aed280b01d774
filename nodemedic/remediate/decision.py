"""Faults → decision records, the input of one remediation.

The decision id is deterministic (cluster, instance, fault, time window) so that the same
fault seen twice, by two Lambda retries or two overlapping batches, names the same Step
Functions execution and is acted on once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any, Final, Literal, cast

from nodemedic.catalog import Action, Source, acted
from nodemedic.contracts.kube import STATUS_OF_ACTION
from nodemedic.contracts.logs import DEEP_CHECK_SOURCE, NODE_LOG_GROUP_RE, STREAM_RE
from nodemedic.detect.classifier import Fault
from nodemedic.health.gpu_reset import gpu_of

SCHEMA = 1
DEFAULT_WINDOW = 600
_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")
_EXECUTION_NAME = re.compile(r"[^A-Za-z0-9_-]")


DecisionSource = Source | Literal["manual", "planned"]
"""Where a decision comes from: a node's kmsg or health stream, a person
(``contracts.MANUAL_SOURCE``, ``nodemedic.remediate.manual``) or an AWS notice
(``contracts.PLANNED_SOURCE``, ``nodemedic.remediate.planned``)."""


class IdentityError(ValueError):
    """Log group or stream names that do not say which node wrote the line."""


@dataclass(frozen=True)
class Identity:
    cluster: str
    instance_id: str
    source: Source


def identity_of(log_group: str, log_stream: str) -> Identity:
    """The node a batch came from, taken from the names the agent writes to, never from
    the message text: a line must not be able to point remediation at another node."""
    group = NODE_LOG_GROUP_RE.match(log_group)
    if group is None:
        raise IdentityError(f"log group {log_group!r} is not /nodemedic/<cluster>/nodes")
    stream = STREAM_RE.match(log_stream)
    if stream is None:
        raise IdentityError(
            f"log stream {log_stream!r} is not <instance-id>/(kmsg|health|deep-check)"
        )
    source = cast(Source, stream["source"])
    return Identity(cluster=group["cluster"], instance_id=stream["instance"], source=source)


@dataclass(frozen=True)
class Decision:
    """The record the state machine consumes; its JSON form is a public interface."""

    decision_id: str
    cluster: str
    instance_id: str
    fault_id: str
    component: str
    action: str
    severity: str
    condition: str
    condition_status: str
    metric: str
    metric_namespace: str
    health_status: str
    evidence_line: str
    source: DecisionSource
    first_seen: str
    count: int
    schema: int = SCHEMA
    key_boot_id: str | None = None
    """The boot whose registered key proved the line (``nodemedic.origin.signing.Proven``),
    on the decision of a deep check's pass only: the post-reboot gate admits a held node
    only for a pass of its current boot. Absent from the record when None."""

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        return {k: v for k, v in record.items() if v is not None or k not in OPTIONAL_FIELDS}


OPTIONAL_FIELDS: Final = ("key_boot_id",)
"""Fields a decision record carries only where they apply, added to the contract after
schema 1: a record without them is still whole (an older classifier's, a person's)."""
REQUIRED_FIELDS: Final = tuple(f.name for f in fields(Decision) if f.name not in OPTIONAL_FIELDS)
"""Every field a schema 1 decision record has (the state machine's ``Valid decision?``)."""


def window_of(at: datetime, window: int) -> int:
    return int(at.timestamp()) // window


def decision_id(
    cluster: str,
    instance_id: str,
    fault_id: str,
    window_index: int,
    *,
    injected: bool = False,
    previous_boot: bool = False,
    unproven: bool = False,
    stale: bool = False,
    gpu: str | None = None,
) -> str:
    """A valid Step Functions execution name (≤ 80 of ``[A-Za-z0-9_-]``), readable by a
    person and unique per (cluster, instance, fault, window). The decision of an
    ``injected`` line the cluster does not trust has an id of its own: it must not take
    the name, and so the place, of the decision a kernel line of the same fault gets; nor
    must the notify of a ``previous_boot`` or a ``stale`` line. A decision that acts on one
    ``gpu`` (its PCI bus id: a reset) is that GPU's: the same fault of another GPU of the
    node in the same window is a fault of its own, not a duplicate."""
    key = f"{cluster}\0{instance_id}\0{fault_id}\0{window_index}"
    for salt, present in (
        ("injected", injected),
        ("previous-boot", previous_boot),
        ("unproven", unproven),
        ("stale", stale),
    ):
        if present:
            key += f"\0{salt}"
    if gpu:
        key += f"\0gpu={gpu}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    name = _EXECUTION_NAME.sub("-", f"{instance_id}-{digest}-{fault_id}")
    return name[:80]


EVIDENCE_MAX = 2048
"""Characters of the fault line a decision carries (a kernel record is at most 1 KiB)."""
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (terminal escape sequences) and bidirectional overrides: what would
let a line's author rewrite what an operator sees in ``kubectl describe node``, a mail or
a log viewer."""


def evidence(line: str) -> str:
    """``line`` as people and the APIs are shown it: cut to EVIDENCE_MAX characters, each
    unsafe character written as a visible escape (``\\x1b``, ``\\u202e``). The line is
    written by whoever can write the node's log, so it is never trusted as text."""

    def escape(found: re.Match[str]) -> str:
        code = ord(found[0])
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(escape, line[:EVIDENCE_MAX])[:EVIDENCE_MAX]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


INJECTED_ACTION: Final[Action] = "notify"
"""The most a line marked injected may do where the cluster does not accept injected
faults: recorded and notified; the node is never cordoned, drained, rebooted or replaced."""
CAPPED_NOTE = (
    "(not logged by the kernel: {action} capped to notify, accept_injected_faults is off) "
)
"""Put before the evidence of a capped decision: the decision record says why its action
is weaker than its rule's without a field of its own."""
PREVIOUS_BOOT_NOTE = "(logged by the boot that died: {action} capped to notify) "
"""Put before the evidence of a decision capped because its line is previous-boot evidence
(``contracts.PREVIOUS_BOOT_MARK``): the reboot that line asked for, or worse, already
happened, and nothing says the new boot is sick."""
UNPROVEN_NOTE = (
    "(origin not proven: {reason}: {action} capped to notify, proof_of_origin is enforce) "
)
"""Put before the evidence of a decision capped because nothing proves its line came from
the instance whose stream holds it (``nodemedic.origin``): whoever holds the agents'
shared credential can write any node's stream."""
STALE_NOTE = (
    "(stale: logged {age} s before it was heard, more than stale_after ({limit} s): "
    "{action} capped to notify) "
)
"""Put before the evidence of a decision capped because its line is old when it is heard (a
replay of the dead-letter queue, a late delivery): the node may have been repaired, or be
another machine's, since; what it says of the node now is not known."""


def cap_note(decision: Decision) -> str:
    """Why ``decision`` is weaker than its rule's action: the note its evidence starts with
    (``CAPPED_NOTE`` and the others), without its parentheses. Read it only of a decision
    known to be capped: the evidence of any other is a line as its author wrote it."""
    note, _, _ = decision.evidence_line.partition(") ")
    return note.removeprefix("(")


@dataclass(frozen=True)
class Stale:
    """How old a line was when it was heard, and the cluster's ``stale_after``."""

    age: int
    limit: int


def staleness(logged_ms: int, heard_at: float | None, limit: int | None) -> Stale | None:
    """``Stale`` when a line logged at ``logged_ms`` (epoch milliseconds) was heard at
    ``heard_at`` (epoch seconds) more than ``limit`` seconds later; None when it is fresh,
    or when no age is checked (either None)."""
    if heard_at is None or limit is None:
        return None
    age = int(heard_at - logged_ms / 1000)
    return Stale(age, limit) if age > limit else None


def distrusted(fault: Fault, accept_injected: bool) -> bool:
    """``fault``'s line may not act on the node: it is marked injected (not logged by the
    kernel) and the cluster does not accept injected faults."""
    return not accept_injected and fault.injected


def decide(
    fault: Fault,
    identity: Identity,
    *,
    first_seen: datetime,
    count: int = 1,
    window: int = DEFAULT_WINDOW,
    accept_injected: bool = False,
    unproven: str | None = None,
    gpu_reset: bool = False,
    key_boot_id: str | None = None,
    stale: Stale | None = None,
) -> Decision | None:
    """The decision for ``fault`` on ``identity``'s node, or None when the rule's action
    asks for nothing to be done. A line marked injected is at most notified unless
    ``accept_injected`` (the cluster setting ``accept_injected_faults``): a tenant who can
    write to the node's kernel log must not be able to have the node rebooted or replaced.
    A line of the boot that died (pstore) is at most notified, whatever the cluster: acting
    on it would reboot or replace the node again for a crash that is already over. A line
    whose origin is ``unproven`` (the reason; None when proven or not required) is at most
    notified too: it may have been written by any holder of the agents' credential. A GPU
    reset is a reboot unless ``gpu_reset`` (``catalog.acted``). ``key_boot_id``: the boot
    whose key proved the line, carried by the decision (``Decision.key_boot_id``). A
    ``stale`` line (heard more than ``stale_after`` after it was logged) is at most notified
    too. A decision to reset a GPU names the GPU in its id (``decision_id``)."""
    rule = fault.rule
    if rule.action == "ignore":
        return None
    if not _INSTANCE.match(identity.instance_id):
        raise IdentityError(f"not an EC2 instance id: {identity.instance_id!r}")
    untrusted = distrusted(fault, accept_injected)
    previous = fault.previous_boot
    capped = (
        untrusted or previous or unproven is not None or stale is not None
    ) and rule.action != INJECTED_ACTION
    action = INJECTED_ACTION if capped else acted(rule.action, gpu_reset=gpu_reset)
    if previous:
        note = PREVIOUS_BOOT_NOTE.format(action=rule.action)
    elif untrusted:
        note = CAPPED_NOTE.format(action=rule.action)
    elif stale is not None:
        note = STALE_NOTE.format(age=stale.age, limit=stale.limit, action=rule.action)
    else:
        note = UNPROVEN_NOTE.format(reason=unproven, action=rule.action)
    note = note if capped else ""
    # A deep check runs once per boot: the check after a reboot, minutes after the one at
    # first boot, is a verdict of its own, which the reboot's hold waits for. Its line keeps
    # its time when delivered again, so the second is its window.
    window = 1 if identity.source == DEEP_CHECK_SOURCE else window
    return Decision(
        decision_id=decision_id(
            identity.cluster,
            identity.instance_id,
            rule.id,
            window_of(first_seen, window),
            injected=untrusted,
            previous_boot=previous,
            unproven=unproven is not None,
            stale=stale is not None,
            gpu=gpu_of(fault.line) if action == "reset" else None,
        ),
        cluster=identity.cluster,
        instance_id=identity.instance_id,
        fault_id=rule.id,
        component=rule.component,
        action=action,
        severity=rule.severity,
        condition=rule.condition,
        condition_status=rule.condition_status,
        metric=rule.metric,
        metric_namespace=rule.namespace,
        health_status=STATUS_OF_ACTION[action],
        evidence_line=evidence(note + fault.line),
        source=identity.source,
        first_seen=iso(first_seen),
        count=count,
        key_boot_id=key_boot_id,
    )


def recent(hits: Mapping[str, float], window: int) -> dict[str, float]:
    """The hits (line id -> epoch seconds) within ``window`` seconds of the newest, oldest
    first: what a rule's threshold counts. Keyed by the line (``LogEvent.line_id``), so a
    batch delivered twice (subscription delivery is at least once), and a line CloudWatch
    stored twice, count once."""
    if not hits:
        return {}
    newest = max(hits.values())
    ordered = sorted(hits.items(), key=lambda hit: (hit[1], hit[0]))
    return {event: at for event, at in ordered if at > newest - window}
