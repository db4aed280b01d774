"""Where each step of an injected fault's timeline comes from: what the world itself
recorded, never the demo's own clock at the moment it looked.

=============  ==================================================================
line written   the kernel log file's modification time after ``nodemedic inject``
shipped        CloudWatch Logs' ingestion time of the event in ``<instance>/kmsg`` (or
               the stream it was written to, ``FaultRun.where``)
classified     the earliest record of the classifier's verdict: the execution it
               started, or else its invocation's output in its log group
started        the Step Functions execution's start date
marked         the Node watch event showing it cordoned / tainted / labelled
drained        the execution history's ``Drained`` state
rebooted       the Node watch event showing it Ready with a new boot id (through
               HyperPod's BatchRebootClusterNodes where the world's machines are its)
GPU reset      the Node watch event showing it given back at the same boot id, after it
               was marked and SSM ran the reset with success
replaced       the hypervisor seeing ``SetInstanceHealth Unhealthy`` (or the
               instance terminated by HyperPod's BatchReplaceClusterNodes, or once
               Karpenter deleted the Node of the NodeClaim nodemedic deleted)
notified       the SQS ``SentTimestamp`` of the SNS message about the instance
=============  ==================================================================

``Observer`` fills in the steps of fault runs from those records; ``follow`` observes runs
until each is done, showing every step as it is known.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from nodemedic.contracts.kube import HEALTH_LABEL, LABEL_PREFIX
from nodemedic.contracts.logs import split_signature
from nodemedic.contracts.stack import FLEET_HELD_STATE
from nodemedic.remediate.approval import AWAITING
from nodemedic.remediate.fleet import OUTCOME as FLEET_OUTCOME
from nodemedic.remediate.quarantine import TRIPPED_OUTCOME as QUARANTINE_TRIPPED
from world.aws.inbox import Notification
from world.kube.watch import NodeSeen
from world.timeline import FaultRun, Step
from world.world import World

QUIET_SECONDS = 3.0
"""How long a line that needs nothing must stay without consequence."""

ENDED_EVENTS = frozenset(
    {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}
)
"""The history events that end an execution: after one, its history no longer grows."""


class Observer:
    """Fills in the steps of fault runs from the world's records; one per scenario, so the
    lookups it makes (Logs, Step Functions, SQS) are shared by every run."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.logs = world.aws("logs")
        self.sfn = world.aws("stepfunctions")
        self._histories: dict[str, list[dict[str, Any]]] = {}

    def update(self, run: FaultRun) -> None:
        if run.done:
            return
        for step, find in (
            ("shipped", self._shipped),
            ("classified", self._classified),
            ("started", self._started),
            ("marked", self._marked),
            ("drained", self._drained),
            ("acted", self._acted),
            ("notified", self._notified),
            ("held", self._held),
        ):
            if step in run.fault.steps and step not in run.steps:
                found = find(run)
                if found is not None:
                    run.steps[step] = found
        self._settle(run)

    # One finder per step ------------------------------------------------------------------

    def _shipped(self, run: FaultRun) -> Step | None:
        group, stream = run.where or (
            self.world.settings.log_group_name,
            f"{run.machine.instance_id}/kmsg",
        )
        try:
            events = self.logs.filter_log_events(
                logGroupName=group,
                logStreamNames=[stream],
                startTime=int((run.written_at - 60) * 1000),
            )["events"]
        except self.logs.exceptions.ResourceNotFoundException:
            return None
        for event in events:
            # The agent ships it behind its signature mark (proof of origin).
            if split_signature(event["message"])[1].strip() == run.line.strip():
                return Step(event["ingestionTime"] / 1000, f"{group} {stream}")
        return None

    def _classified(self, run: FaultRun) -> Step | None:
        shipped = run.steps.get("shipped")
        if shipped is None:
            return None
        try:
            events = self.logs.filter_log_events(
                logGroupName=self.world.classifier_log_group,
                startTime=round(shipped.at * 1000),
            )["events"]
        except self.logs.exceptions.ResourceNotFoundException:
            return None
        # Delivery runs within the PutLogEvents call that ingested the line: the first
        # invocation for the node from that moment on is the one that saw it.
        for event in sorted(events, key=lambda e: e["timestamp"]):
            summary = _json_object(event["message"])
            if summary.get("instance_id") != run.machine.instance_id:
                continue
            if event["timestamp"] < round(shipped.at * 1000):
                continue
            at = event["timestamp"] / 1000
            started = summary.get("started") or summary.get("duplicates") or []
            if started:
                run.decision_id = str(started[0])
                detail = f"{run.rule} -> {run.fault.action}"
                # The classifier starts the execution before its output is logged.
                execution = self._started(run)
                if execution is not None:
                    at = min(at, execution.at)
            elif summary.get("below_threshold"):
                detail = f"{run.rule}: below its threshold, nothing yet"
            else:
                detail = "no fault: the catalog ignores this line"
            return Step(at, detail)
        return None

    def _started(self, run: FaultRun) -> Step | None:
        arn = self.execution_arn(run)
        if arn is None:
            return None
        try:
            found = self.sfn.describe_execution(executionArn=arn)
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return None
        return Step(_epoch(found["startDate"]), f"execution {run.decision_id}")

    def _marked(self, run: FaultRun) -> Step | None:
        seen = self.world.watch.first(run.machine.instance_id, run.written_at, _marked)
        if seen is None:
            return None
        parts = ["cordoned"] if seen.unschedulable else []
        parts += [f"taint {t}" for t in seen.taints if t.startswith(LABEL_PREFIX)]
        if seen.health:
            parts.append(f"{HEALTH_LABEL}={seen.health}")
        return Step(seen.at, ", ".join(parts))

    def _drained(self, run: FaultRun) -> Step | None:
        entered = self.state_entered(run, "Drained")
        if entered is None:
            return None
        moved = self._rescheduled(run)
        return Step(entered, moved or "no pods to move")

    def _acted(self, run: FaultRun) -> Step | None:
        instance_id = run.machine.instance_id
        if run.fault.expect == "reset":
            return self._reset(run)
        if run.fault.expect == "reboot":
            seen = self.world.watch.first(
                instance_id,
                run.written_at,
                lambda s: s.ready and bool(s.boot_id) and s.boot_id != run.boot_id,
            )
            if seen is None:
                return None
            back = f"Ready with boot id {seen.boot_id[:8]} (was {run.boot_id[:8]})"
            return Step(seen.at, self._through("BatchRebootClusterNodes", back))
        unhealthy = [
            e for e in self.world.machine_events(instance_id, "unhealthy") if e.at >= run.written_at
        ]
        if not unhealthy:
            return None
        return Step(unhealthy[0].at, self._terminated(instance_id))

    def _terminated(self, instance_id: str) -> str:
        """How the instance's owner replaced it."""
        if instance_id in self.world.karpenter:
            return "NodeClaim deleted, Karpenter's instance terminated"
        if self.world.hyperpod is None:
            return "Auto Scaling instance Unhealthy: terminating"
        return self._through("BatchReplaceClusterNodes", "terminating")

    def _through(self, call: str, detail: str) -> str:
        """``detail``, with the HyperPod call that acted where HyperPod owns the machines."""
        if self.world.hyperpod is None:
            return detail
        return f"HyperPod {call} ({self.world.hyperpod}): {detail}"

    def _reset(self, run: FaultRun) -> Step | None:
        marked = run.steps.get("marked")
        if marked is None or (run.machine.instance_id, "Success") not in self.world.gpus.resets:
            return None
        seen = self.world.watch.first(
            run.machine.instance_id,
            marked.at,
            lambda s: s.ready and not _marked(s) and s.boot_id == run.boot_id,
        )
        if seen is None:
            return None
        return Step(
            seen.at, f"verified, node given back; boot id {run.boot_id[:8]} unchanged (no reboot)"
        )

    def _notified(self, run: FaultRun) -> Step | None:
        for message in self.world.inbox.about(run.machine.instance_id):
            if message.sent_at >= run.written_at - 1 and _final(message):
                run.outcome = message.outcome
                return Step(message.sent_at, message.subject)
        return None

    def _held(self, run: FaultRun) -> Step | None:
        entered = self.state_entered(run, FLEET_HELD_STATE)
        if entered is None:
            return None
        run.outcome = FLEET_OUTCOME
        return Step(entered, "fleet event: given back, neither rebooted nor replaced")

    # Helpers --------------------------------------------------------------------------

    def execution_arn(self, run: FaultRun) -> str | None:
        if run.decision_id is None:
            return None
        machine_arn = self.world.state_machine_arn
        return f"{machine_arn.replace(':stateMachine:', ':execution:')}:{run.decision_id}"

    def history(self, run: FaultRun) -> list[dict[str, Any]]:
        """The execution's history; cached once the execution has ended."""
        arn = self.execution_arn(run)
        if arn is None:
            return []
        if arn in self._histories:
            return self._histories[arn]
        try:
            events: list[dict[str, Any]] = []
            kwargs: dict[str, Any] = {}
            while True:
                page = self.sfn.get_execution_history(executionArn=arn, **kwargs)
                events += page["events"]
                if not page.get("nextToken"):
                    break
                kwargs["nextToken"] = page["nextToken"]
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return []
        # Ended by the history it was read with, not by a status read after it: an execution
        # that ends between the two reads would keep a history without its last states.
        if any(e["type"] in ENDED_EVENTS for e in events):
            self._histories[arn] = events
        return events

    def whereabouts(self, run: FaultRun) -> str:
        """Where the run's execution stands (for a run that took too long): ended, and how,
        or the last state it entered and when, as seconds since the line was written."""
        events = self.history(run)
        if not events:
            return "no execution"
        arn = self.execution_arn(run)
        found = self.sfn.describe_execution(executionArn=arn or "")
        entered = [e for e in events if e.get("stateEnteredEventDetails")]
        if not entered:
            return f"execution {found['status']}, in no state yet"
        name = entered[-1]["stateEnteredEventDetails"]["name"]
        since = _epoch(entered[-1]["timestamp"]) - run.written_at
        if found["status"] != "RUNNING":
            return (
                f"execution {found['status']} at its state {name!r} (+{since:.1f}s): "
                f"{found.get('error', '')} {found.get('cause', '')}"
            )
        return f"execution RUNNING, in {name!r} since +{since:.1f}s"

    def state_entered(self, run: FaultRun, name: str) -> float | None:
        for event in self.history(run):
            details = event.get("stateEnteredEventDetails")
            if details and details.get("name") == name:
                return _epoch(event["timestamp"])
        return None

    def _rescheduled(self, run: FaultRun) -> str:
        node = run.machine.node
        placements = self.world.job.placements
        moved = {p.worker for p in placements if p.node == node}
        later = [
            p for p in placements if p.worker in moved and p.node != node and p.at >= run.written_at
        ]
        if not moved:
            return ""
        where = ", ".join(f"worker {p.worker} -> {p.node}" for p in later)
        return f"evicted worker(s) {', '.join(str(w) for w in sorted(moved))}" + (
            f"; rescheduled: {where}" if where else "; waiting for a node"
        )

    def _settle(self, run: FaultRun) -> None:
        """A run is done when its last step is in, or, for a line that needs nothing, when
        it stayed without consequence for ``QUIET_SECONDS`` after it was classified."""
        if run.fault.expect == "nothing":
            classified = run.steps.get("classified")
            run.done = classified is not None and time.time() - classified.at >= QUIET_SECONDS
        else:
            run.done = all(s in run.steps for s in run.fault.steps)


def _final(message: Notification) -> bool:
    """The remediation's outcome, not a notice on the way: the breaker's or the quarantine's
    page when the decision trips it, its request for approval, or its notice that it holds
    the decision (one held until its hold ran out is reported ``held`` too, with its
    duration)."""
    if message.outcome in (None, "tripped", QUARANTINE_TRIPPED, AWAITING):
        return False
    return message.outcome != "held" or "seconds" in message.body


def _marked(seen: NodeSeen) -> bool:
    return seen.unschedulable or seen.tainted or seen.health not in (None, "Schedulable")


def _json_object(text: str) -> dict[str, Any]:
    start = text.find("{")
    if start < 0:
        return {}
    try:
        value = json.loads(text[start:])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _epoch(value: datetime | float | str) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(value).timestamp()


def follow(
    observer: Observer,
    runs: list[FaultRun],
    show: Callable[[FaultRun, str], None],
    *,
    timeout: float,
    tick: Callable[[], None] | None = None,
    pending: Callable[[], bool] | None = None,
) -> None:
    """Observe ``runs`` until each is done or ``timeout`` passes; ``show(run, step)`` is
    called once per step, in the order of the fault's steps, as soon as it and the steps
    before it are known. ``tick`` runs on every round (the storm's breaker view, the spread's
    next fault); while ``pending()`` says more runs are to come, ``tick`` may add to
    ``runs``."""
    shown: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while True:
        ready: list[tuple[float, int, FaultRun, str]] = []
        for index, run in enumerate(runs):
            observer.update(run)
            order = run.fault.steps
            shown.setdefault(id(run), 0)
            while shown[id(run)] < len(order) and order[shown[id(run)]] in run.steps:
                step = order[shown[id(run)]]
                ready.append((run.steps[step].at, index, run, step))
                shown[id(run)] += 1
        # Several runs' steps seen in one round are shown in the order they happened.
        for _, _, run, step in sorted(ready, key=lambda r: (r[0], r[1])):
            show(run, step)
        if tick is not None:
            tick()
        more = pending is not None and pending()
        if (all(r.done for r in runs) and not more) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for run in runs:
        if not run.done:
            missing = [s for s in run.fault.steps if s not in run.steps] or ["a quiet period"]
            run.problems.append(
                f"not observed within {timeout:.0f}s: {', '.join(missing)} "
                f"({observer.whereabouts(run)})"
            )
            run.done = True
