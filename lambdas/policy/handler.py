"""The remediation state machine's arithmetic: ``plan``, ``elapsed``, ``clock``, ``fleet``,
the ``quarantine`` limits, and the breaker's ``admission`` windows and ``judge``ment of a
refused admission.

States Language has no date arithmetic: the escalation window, the lock's expiry in epoch
seconds and the durations the metrics report need code. Everything else the state machine
reshapes itself, so the payloads are plain values, not DynamoDB wire shapes. Thin, and
standard library only, so the function's bundle is just these modules. Bad input raises
``PolicyError``: the task fails, the state machine records where and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodemedic.remediate import breaker, fleet, quarantine
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.policy import Group, Policy, clock, elapsed, parse_time, plan
from nodemedic.remediate.target import hyperpod_group, target_of


def _group(raw: dict[str, Any]) -> Group | None:
    """``found`` false: the instance is in no Auto Scaling group (``$.group`` says so)."""
    return Group(name=str(raw["name"]), size=int(raw["size"])) if raw["found"] else None


def _plan(event: dict[str, Any]) -> dict[str, Any]:
    """With the policy of the instance's group where it has settings of its own
    (``group_policies``), else the cluster's."""
    last = event["last_reboot"].get("at")
    # Auto Scaling's answer: the instance's type, a list of one (none outside a group);
    # sent only by a cluster with gpu_reset on, the only one to which a type matters.
    types = event.get("instance_types") or [None]
    group = _group(event["group"])
    own = event.get("group_policies", {}).get(group.name) if group is not None else None
    policy = Policy.from_mapping(own or event["policy"])
    found = target_of(
        event.get("target"),
        group.name if group is not None else None,
        reserved=policy.reserved_capacity,
        repair=policy.hyperpod_repair,
    )
    return plan(
        event["decision"],
        group,
        parse_time(last, "last reboot") if last is not None else None,
        parse_time(event["now"], "now"),
        policy,
        instance_type=types[0],
        target=found,
    ).to_mapping()


def _attributes(result: dict[str, Any]) -> dict[str, Any]:
    """A GetItem result as plain values (``{}`` for no item). The breaker's judgement reads
    items whose attributes may be missing, which States Language cannot reshape without a
    Choice for each."""
    return breaker.plain_item(result.get("Item", {}))


def _judge(event: dict[str, Any]) -> dict[str, Any]:
    hour, day = (frozenset(_attributes(event[w]).get(breaker.STARTED, ())) for w in ("hour", "day"))
    found = breaker.judge(
        _attributes(event["breaker"]),
        (hour, day),
        instance=str(event["instance"]),
        decision=str(event["decision"]),
        action=str(event["action"]),
        group=str(event["group"]),
        now=int(event["now"]),
        limits=breaker.Limits.from_mapping(event["limits"]),
    )
    return {"verdict": found.verdict, "reason": found.reason}


def _fleet(event: dict[str, Any]) -> dict[str, Any]:
    group = event["group"]
    return fleet.judge(
        fleet.sightings_of(event["window"]),
        instance_id=str(event["instance_id"]),
        fault_id=str(event["fault_id"]),
        group=str(group["name"]),
        group_size=int(group["size"]),
        now_epoch=int(parse_time(event["now"], "now").timestamp()),
        rules=fleet.FleetRules.from_mapping(event["rules"]),
    ).to_mapping()


def _admission(event: dict[str, Any]) -> dict[str, Any]:
    at = int(parse_time(event["at"], "at").timestamp())
    return breaker.admission(at, str(event["action"]), breaker.Limits.from_mapping(event["limits"]))


def _quarantine(event: dict[str, Any]) -> dict[str, Any]:
    """The decision's quarantine window and limits, and the page's reason if refused."""
    rules = quarantine.QuarantineRules.from_mapping(event["rules"])
    group = str(event["group"]["name"]) if event["group"]["found"] else ""
    found = quarantine.limits(
        int(event["group"]["size"]) if group else 0,
        int(event["cluster_nodes"]),
        int(parse_time(event["at"], "at").timestamp()),
        rules,
    )
    reason = quarantine.tripped_reason(str(event["instance_id"]), group, found, rules)
    return found.to_mapping() | {"reason": reason}


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "plan": _plan,
    "elapsed": lambda event: {"seconds": elapsed(event["since"], event["until"])},
    "clock": lambda event: clock(event["at"]),
    "admission": _admission,
    "judge": _judge,
    "fleet": _fleet,
    "quarantine": _quarantine,
    "hyperpod": lambda event: hyperpod_group(str(event["cluster"]), event["description"]),
}


def handler(event: Any, context: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise PolicyError(f"the event is not an object: {type(event).__name__}")
    op = event.get("op")
    run = OPS.get(op) if isinstance(op, str) else None
    if run is None:
        raise PolicyError(f"unknown op {op!r}: expected {', '.join(OPS)}")
    try:
        return run(event)
    except PolicyError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError, IndexError) as exc:
        # A value of the wrong shape anywhere in the payload (a text for a number, an
        # infinite float, a list of two for one): the task fails with what was wrong.
        raise PolicyError(f"{op!r} payload lacks or mistypes {exc!r}") from exc
