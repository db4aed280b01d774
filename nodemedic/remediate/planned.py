"""Planned repairs: AWS's advance notices (EventBridge events) → decision records.

AWS says ahead of time that an instance will go: AWS Health's scheduled EC2 events (a
retirement, a reboot for maintenance, a stop), a Capacity Block's expiration warning, a Spot
interruption warning. Each notice for an instance of a managed node group becomes a decision
like the classifier's, through the same lock, ledger and breaker; only its ``source``
(``planned``), its fault (``planned-<notice>``) and five fields tell it apart:
``notice`` (the event type), ``notice_id`` (the event's own id), ``deadline`` (when AWS acts),
``act_at`` (``planned_lead_time`` before it, or at once when that is past) and ``replaceable``
(false for a Capacity Block: its capacity ends, so the node is drained and left to go).

The payloads and their sources: ``tests/events/aws-notices/SOURCES.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Final

from nodemedic.contracts.kube import PLANNED_CONDITION, PLANNED_SOURCE, STATUS_OF_ACTION
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.remediate.decision import Decision, decision_id, evidence, iso

HEALTH_SOURCE: Final = "aws.health"
HEALTH_DETAIL_TYPE: Final = "AWS Health Event"
HEALTH_CODES: Final = {
    "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED": "instance-retirement",
    "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED": "system-reboot-maintenance",
    "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED": "instance-reboot-maintenance",
    "AWS_EC2_INSTANCE_STOP_SCHEDULED": "instance-stop",
}
"""The AWS Health event type codes of a scheduled end of an instance, and the notice each is."""
EC2_SOURCE: Final = "aws.ec2"
CAPACITY_BLOCK_DETAIL_TYPES: Final = (
    "Capacity Block Expiration Warning",
    "Capacity Block Reservation Expiration Warning",
)
"""The two spellings AWS's documentation gives the warning (two copies of one page)."""
CAPACITY_BLOCK_NOTICE: Final = 600
"""Seconds from the warning to the first terminations: "any instances running in the
reservation will begin to terminate in 10 minutes" (EC2 User Guide, Capacity Blocks)."""
SPOT_DETAIL_TYPE: Final = "EC2 Spot Instance Interruption Warning"
SPOT_NOTICE: Final = 120
"""Seconds from the Spot warning to the interruption: "two minutes"."""
CAPACITY_BLOCK: Final = "capacity-block-expiry"
SPOT: Final = "spot-interruption"
_INSTANCE = re.compile(r"(?:^|/)(i-[0-9a-f]{8,17})$")
EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(9000, 1, 1, tzinfo=UTC)
"""The times a notice may name: any other is a payload's mistake (a deadline in year 1 or
9999 would overflow the lead time or the Capacity Block's ten minutes)."""


class NoticeError(ValueError):
    """An event of a kind nodemedic acts on whose payload cannot be read."""


@dataclass(frozen=True)
class Notice:
    """What one event says: which instances go (or which reservation), and when."""

    kind: str
    """The notice's name: a value of ``HEALTH_CODES``, ``CAPACITY_BLOCK`` or ``SPOT``."""
    code: str
    """The event's own type: the Health event type code, or the detail-type."""
    reference: str
    """The event's own id (Health's ``eventArn``, the reservation, or the event id)."""
    instance_ids: tuple[str, ...]
    reservation_id: str
    """The Capacity Block's reservation, whose instances the notice is about; else ``""``."""
    deadline: datetime

    @property
    def replaceable(self) -> bool:
        return self.kind != CAPACITY_BLOCK

    @property
    def fault_id(self) -> str:
        return f"planned-{self.kind}"


def _text(value: Any) -> str:
    """A field that must be text; anything else, and text no API can carry (a lone
    surrogate, which JSON's ``\ud800`` makes), reads as absent."""
    if not isinstance(value, str):
        return ""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return ""
    return value


def _detail_type(event: Mapping[str, Any]) -> str:
    """The standard envelope's ``detail-type``, or the ``detail_type`` the Capacity Block
    examples of AWS's documentation use."""
    return _text(event.get("detail-type")) or _text(event.get("detail_type"))


def _time(value: Any, what: str) -> datetime:
    """ISO 8601 (the envelope's ``time``) or RFC 1123 (Health's ``startTime``), between
    ``EARLIEST`` and ``LATEST``: a deadline and the lead time before it are then dates."""
    text = _text(value)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        try:
            parsed = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError) as exc:
            raise NoticeError(f"{what} is not a time: {text!r}") from exc
    if parsed.tzinfo is None:
        raise NoticeError(f"{what} has no time zone: {text!r}")
    if not EARLIEST <= parsed <= LATEST:
        raise NoticeError(f"{what} is no time a notice can mean: {text!r}")
    return parsed.astimezone(UTC)


def _instance(value: Any) -> str | None:
    """An instance id, bare or at the end of an instance ARN."""
    found = _INSTANCE.search(_text(value))
    return found[1] if found else None


def notice_of(event: object) -> Notice | None:
    """The notice ``event`` gives, or None for an event nodemedic does not act on (another
    Health event, a closed one, a public one with no instance). ``NoticeError`` is the only
    error it raises, whatever the event holds: EventBridge delivers what any rule matched,
    and one event must never fail the others' invocations."""
    if not isinstance(event, Mapping):
        raise NoticeError(f"the event is not an object: {type(event).__name__}")
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise NoticeError("the event has no detail")
    source, kind = event.get("source"), _detail_type(event)
    if source == HEALTH_SOURCE and kind == HEALTH_DETAIL_TYPE:
        return _health(detail)
    if source != EC2_SOURCE or kind not in (*CAPACITY_BLOCK_DETAIL_TYPES, SPOT_DETAIL_TYPE):
        return None
    sent = _time(event.get("time"), "time")
    if kind in CAPACITY_BLOCK_DETAIL_TYPES:
        reservation = _text(detail.get("capacity-reservation-id"))
        if not reservation:
            raise NoticeError("a Capacity Block warning names no capacity-reservation-id")
        deadline = sent + timedelta(seconds=CAPACITY_BLOCK_NOTICE)
        if detail.get("end-date"):
            deadline = min(deadline, _time(detail["end-date"], "end-date"))
        return Notice(CAPACITY_BLOCK, kind, reservation, (), reservation, deadline)
    # The id from the detail: the event's resources name the instance by an ARN of an
    # Availability Zone, "different from the ARN format for EC2 resources".
    instance = _instance(detail.get("instance-id"))
    if instance is None:
        raise NoticeError("a Spot interruption warning names no instance-id")
    deadline = sent + timedelta(seconds=SPOT_NOTICE)
    return Notice(SPOT, kind, _text(event.get("id")), (instance,), "", deadline)


def _health(detail: Mapping[str, Any]) -> Notice | None:
    code = _text(detail.get("eventTypeCode"))
    if code not in HEALTH_CODES or detail.get("statusCode") == "closed":
        return None
    entities = detail.get("affectedEntities") or []
    if not isinstance(entities, list):
        raise NoticeError("affectedEntities is not a list")
    instances = tuple(
        sorted(
            {
                found
                for entity in entities
                if isinstance(entity, Mapping)
                and (found := _instance(entity.get("entityValue"))) is not None
            }
        )
    )
    if not instances:
        return None
    deadline = _time(detail.get("startTime"), "startTime")
    return Notice(HEALTH_CODES[code], code, _text(detail.get("eventArn")), instances, "", deadline)


def acts_on(
    notice: Notice, group: str | None, node_groups: tuple[str, ...], spot_groups: tuple[str, ...]
) -> bool:
    """Whether a notice for an instance of ``group`` starts a planned remediation: only in
    a managed group (``node_groups``), and a Spot warning only in a group listed as Spot."""
    if group is None or group not in node_groups:
        return False
    return notice.kind != SPOT or group in spot_groups


def act_at(notice: Notice, lead_time: int, now: datetime) -> datetime:
    """``lead_time`` seconds before the deadline, and never before ``now``."""
    return max(now.astimezone(UTC), notice.deadline - timedelta(seconds=lead_time))


def planned_decision(
    cluster: str, instance_id: str, notice: Notice, *, lead_time: int, now: datetime
) -> dict[str, Any]:
    """The decision record of ``notice`` for one instance. Its id is deterministic in the
    notice and its deadline: the same notice delivered again (AWS Health delivers at least
    once, and as backup events) names the same execution and starts nothing twice; a
    notice moved to another deadline is a decision of its own."""
    if instance_id not in notice.instance_ids and not notice.reservation_id:
        raise NoticeError(f"the notice does not name {instance_id}")
    starts = act_at(notice, lead_time, now)
    deadline = iso(notice.deadline)
    what = "drained and left to end" if not notice.replaceable else "drained and replaced"
    record = Decision(
        decision_id=decision_id(
            cluster, instance_id, notice.fault_id, int(notice.deadline.timestamp())
        ),
        cluster=cluster,
        instance_id=instance_id,
        fault_id=notice.fault_id,
        component="node",
        action="replace",
        severity="warning",
        condition=PLANNED_CONDITION,
        condition_status="True",
        metric="Planned" + "".join(word.capitalize() for word in notice.kind.split("-")),
        metric_namespace=METRICS_NAMESPACE,
        health_status=STATUS_OF_ACTION["replace"],
        evidence_line=evidence(
            f"AWS notice {notice.code} ({notice.reference}): the instance goes at {deadline}; "
            f"{what} from {iso(starts)}"
        ),
        source=PLANNED_SOURCE,
        first_seen=iso(now),
        count=1,
    ).to_record()
    return record | {
        "notice": notice.code,
        "notice_id": evidence(notice.reference),
        "deadline": deadline,
        "act_at": iso(starts),
        "replaceable": notice.replaceable,
    }
