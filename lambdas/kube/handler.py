"""The Kubernetes Lambda: ``{"op": ..., ...}`` → one plain function → a JSON object.

Ops and their fields are fixed in docs/contracts.md. A missing or mistyped field is a
``BadRequest`` naming it, raised before the cluster is touched.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools.utilities.typing import LambdaContext
from kubernetes import client

from lambdas.kube import (
    census,
    drain,
    gate,
    groups,
    nodeclaims,
    nodes,
    requests,
    resume,
    silence,
    spares,
)
from lambdas.kube.client import api_client
from lambdas.kube.env import env
from lambdas.kube.refusals import refusals_retried
from lambdas.observability import logger, tracer
from nodemedic.contracts.kube import HEALTH_STATUSES
from nodemedic.contracts.substrates import DELETE_NODECLAIM_OP, NODECLAIM_GONE_OP, NODECLAIM_OF_OP

T = TypeVar("T")


class BadRequest(ValueError):
    """The event does not fit the op contract."""


class Fields:
    """Typed access to an event's fields; every failure names the field."""

    def __init__(self, event: Mapping[str, Any]) -> None:
        self._event = event

    def _get(self, name: str) -> object:
        if name not in self._event:
            raise BadRequest(f"op {self._event.get('op')!r} needs field {name!r}")
        return self._event[name]

    def _typed(self, name: str, kind: type[T]) -> T:
        value = self._get(name)
        # bool is an int in Python, but a JSON true is no number of seconds.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BadRequest(f"field {name!r} must be {kind.__name__}, got {value!r}")
        return value

    def text(self, name: str, *, empty_ok: bool = False) -> str:
        value = self._typed(name, str)
        if not value and not empty_ok:
            raise BadRequest(f"field {name!r} must not be empty")
        return value

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        value = self.text(name)
        if value not in allowed:
            raise BadRequest(f"field {name!r} must be one of {allowed}, got {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        return None if self._get(name) is None else self.text(name)

    def added_text(self, name: str) -> str | None:
        """None when absent or null: a field added to an op after the state machine that
        calls it (one of the release before, mid-deploy, leaves it out)."""
        return None if self._event.get(name) is None else self.text(name)

    def optional_texts(self, name: str) -> list[str] | None:
        """None when absent or null; else a list of non-empty strings."""
        if self._event.get(name) is None:
            return None
        value = self._typed(name, list)
        if not all(isinstance(item, str) and item for item in value):
            raise BadRequest(f"field {name!r} must list non-empty strings, got {value!r}")
        return value

    def jobs(self, name: str) -> list[dict[str, Any]]:
        """A list of ``jobs_on_node``'s job objects, each field a non-empty string."""
        value = self._typed(name, list)
        for job in value:
            if not isinstance(job, dict) or not all(
                isinstance(job.get(k), str) and job[k] for k in resume.JOB_FIELDS
            ):
                raise BadRequest(f"field {name!r}: each job needs {resume.JOB_FIELDS}, got {job!r}")
        return value

    def flag(self, name: str) -> bool:
        return self._typed(name, bool)

    def optional_flag(self, name: str) -> bool:
        """False when absent: an optional flag only ever asks for more."""
        return name in self._event and self.flag(name)

    def seconds(self, name: str) -> int:
        value = self._typed(name, int)
        if value < 0:
            raise BadRequest(f"field {name!r} must not be negative, got {value}")
        return value

    def time(self, name: str) -> datetime.datetime:
        raw = self.text(name)
        try:
            at = datetime.datetime.fromisoformat(raw)
            # In UTC at once: a time at the calendar's edge whose offset moves it past the
            # edge is refused here, not when a record is written of it.
            return (at if at.tzinfo else at.replace(tzinfo=datetime.UTC)).astimezone(datetime.UTC)
        except (ValueError, OverflowError) as exc:
            raise BadRequest(f"field {name!r} is not an ISO 8601 time: {raw!r}") from exc


Op = Callable[[client.CoreV1Api, Fields], dict[str, Any]]


def _locate(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return dataclasses.asdict(nodes.locate(core, f.text("instance_id")))


def _marking(f: Fields) -> dict[str, str]:
    """What a ``mark`` and a ``hold`` put on the node."""
    return {
        "fault_id": f.text("fault_id"),
        "condition": f.text("condition"),
        "condition_status": f.choice("condition_status", nodes.CONDITION_STATUSES),
        "reason": f.text("reason"),
        # Free text for people; a fault without an evidence line still gets its mark.
        "message": f.text("message", empty_ok=True),
        "health_status": f.choice("health_status", HEALTH_STATUSES),
    }


def _mark(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    nodes.mark(core, node, **_marking(f), cordon=f.flag("cordon"), taint=f.flag("taint"))
    return {"node": node, "marked": True}


def _hold(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    nodes.hold_for_fleet(core, node, **_marking(f), why=f.text("why"))
    return {"node": node, "held": True}


def _drain(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    done = drain.drain(
        core,
        f.text("node"),
        started_at=f.time("started_at"),
        timeout_seconds=f.seconds("timeout_seconds"),
        settle_seconds=f.seconds("settle_seconds"),
        force=f.flag("force"),
        devices=f.optional_texts("devices"),
    )
    return dataclasses.asdict(done)


def _node_status(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return dataclasses.asdict(nodes.boot_state(core, f.text("node"), f.optional_text("boot_id")))


def _clear(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    nodes.clear(core, node, fault_id=f.text("fault_id"), condition=f.text("condition"))
    return {"node": node, "cleared": True}


def _lift(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    nodes.lift(core, node)
    return {"node": node, "lifted": True}


def _fail(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    marked = nodes.mark_failed(
        core,
        node,
        fault_id=f.text("fault_id"),
        step=f.text("step"),
        error=f.text("error"),
        message=f.text("message", empty_ok=True),
    )
    return {"node": node, "marked": marked}


def _tainted(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return {"nodes": nodes.tainted(core, f.added_text("node"))}


def _silent(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return silence.silent(core, env().ledger("silent"))


def _requested(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return requests.requested(core, f.text("cluster"))


def _deep_check(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    verdict = f.choice("verdict", gate.VERDICTS)
    return gate.deep_check_verdict(
        core,
        f.text("instance_id"),
        passed=verdict == "Passed",
        at=f.time("at"),
        ledger=env().ledger("deep_check"),
        release_hold=f.optional_flag("release_hold"),
        key_boot_id=f.added_text("key_boot_id"),
    )


def _hold_for_deep_check(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    since, held = gate.hold_for_deep_check(
        core,
        node,
        fault_id=f.text("fault_id"),
        condition=f.text("condition"),
        decision_id=f.text("decision_id"),
        rebooted_at=f.time("rebooted_at"),
        ledger=env().ledger("hold_for_deep_check"),
        boot_id=f.added_text("boot_id"),
    )
    return {"node": node, "since": since, "held": held}


def _overdue_deep_checks(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return gate.overdue(core, f.seconds("timeout_seconds"), datetime.datetime.now(datetime.UTC))


def _census(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return census.count_nodes(core, f.text("cluster"))


def _delete_node(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    node = f.text("node")
    return {"node": node, "deleted": nodes.delete_node(core, node)}


def _jobs_on_node(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    jobs = resume.jobs_on_node(core, f.text("node"), f.optional_texts("devices"))
    return {"jobs": jobs, "count": len(jobs)}


def _resume_jobs(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    jobs = f.jobs("jobs")
    done = resume.resume(core, jobs, node=f.text("node"), decision_id=f.text("decision_id"))
    return dataclasses.asdict(done)


def _pick_spare(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return spares.pick_spare(core, f.text("nodegroup"))


def _admit_spare(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return spares.admit_spare(core, f.text("node"))


def _hold_spare(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return spares.hold_spare(core, f.text("nodegroup"), f.time("since"))


def _group_size(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return groups.group_size(f.text("nodegroup"))


def _nodeclaim_of(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return nodeclaims.nodeclaim_of(core, f.text("node"))


def _delete_nodeclaim(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return {"deleted": nodeclaims.delete_nodeclaim(core, f.text("node"), f.text("nodeclaim"))}


def _nodeclaim_gone(core: client.CoreV1Api, f: Fields) -> dict[str, Any]:
    return {"gone": nodeclaims.nodeclaim_gone(core, f.text("node"), f.text("nodeclaim"))}


OPS: dict[str, Op] = {
    "locate": _locate,
    "mark": _mark,
    "drain": _drain,
    "node_status": _node_status,
    "clear": _clear,
    "hold": _hold,
    "lift": _lift,
    "delete_node": _delete_node,
    "fail": _fail,
    "tainted": _tainted,
    "silent": _silent,
    "requested": _requested,
    "jobs_on_node": _jobs_on_node,
    "resume_jobs": _resume_jobs,
    "deep_check": _deep_check,
    "hold_for_deep_check": _hold_for_deep_check,
    "overdue_deep_checks": _overdue_deep_checks,
    "census": _census,
    "pick_spare": _pick_spare,
    "admit_spare": _admit_spare,
    "hold_spare": _hold_spare,
    "group_size": _group_size,
    NODECLAIM_OF_OP: _nodeclaim_of,
    DELETE_NODECLAIM_OP: _delete_nodeclaim,
    NODECLAIM_GONE_OP: _nodeclaim_gone,
}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    config = env()
    op = OPS.get(str(event.get("op"))) if isinstance(event, dict) else None
    if op is None:
        raise BadRequest(f"event must be an object with op one of {sorted(OPS)}: {event!r}")
    logger.append_keys(op=event["op"], node=event.get("node"))
    with refusals_retried(config.cluster):
        result = op(client.CoreV1Api(api_client(config.access)), Fields(event))
    logger.info("done", extra={"result": result})
    return result
