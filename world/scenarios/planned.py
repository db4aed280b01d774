"""``nodemedic demo --scenario planned``: a repair AWS announces, and a person who approves.

The cluster asks a person before every replacement (``approval: replace``). In turn, each
on its own node:

1. AWS Health's notice that an instance is scheduled for retirement (the documented
   payload, ``NOTICE``, its instance and deadline rewritten) is put on the default
   event bus; the stack's rule hands it to the planned Lambda, the planned state machine
   waits until ``planned_lead_time`` before the deadline, then the node is drained, its
   replacement approved and done, all before the deadline;
2. a Neuron DMA error: drained, then the request for approval is mailed; ``nodemedic
   approve`` (the command, in a process of its own, as a person runs it) answers it and
   the replacement proceeds;
3. ``nodemedic history`` names who approved each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from console.cli.remediations import lines
from nodemedic.remediate import approval
from world.aws.motoserver import CREDENTIALS, REGION
from world.observe import Observer, follow
from world.scenarios.kit import DMA_ERROR, FAULT_TIMEOUT, Result, targets
from world.scenarios.verdict import verdict_line, verify
from world.timeline import Fault, FaultRun, Step, format_step, inject
from world.world import Machine, Say, World

NOTICE = Path(__file__).parents[1] / "data" / "aws-health-ec2-instance-retirement-scheduled.json"
"""AWS Health's documented retirement notice (``world/data/SOURCES.md``)."""
LEAD_TIME = 60
"""The scenario's ``planned_lead_time`` (an hour by default): time for the replacement to be
done before the deadline, about 15 s on an idle machine, a minute kept for a busy one."""
NOTICE_SECONDS = LEAD_TIME + 5
"""From the notice to its deadline: about two weeks on AWS."""
APPROVAL_RECORDED = "Record approval"
"""The remediation's state that records an approval (``stacks/remediation/phases``)."""


@dataclass(frozen=True)
class Notice(Fault):
    """A notice AWS sends about an instance, not a line in its kernel log: no agent ships
    it, no classifier reads it."""

    @property
    def steps(self) -> tuple[str, ...]:
        return ("written", "started", "marked", "drained", "acted", "notified")


@dataclass
class NoticeRun(FaultRun):
    deadline: float = 0.0

    def label(self, step: str) -> str:
        return {"written": "notice delivered", "planned": "planned"}.get(step) or super().label(
            step
        )


RETIREMENT = Notice(
    "health",
    "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    "replace",
    "AWS Health: instance retirement scheduled",
)


def run_planned(world: World, say: Say) -> Result:
    observer = Observer(world)
    retiring, faulty = targets(world, 2)
    say("")
    say(
        f"1. {RETIREMENT.title} for {retiring.node} ({retiring.instance_id}), deadline in "
        f"{NOTICE_SECONDS}s (planned_lead_time {LEAD_TIME}s); expect: replace before it"
    )
    notice = _deliver(world, retiring)
    _follow(world, observer, notice, say, "the retirement notice: replace before the deadline")
    acted = notice.steps.get("acted")
    if acted is not None and acted.at >= notice.deadline:
        notice.problems.append(f"replaced {acted.at - notice.deadline:.1f}s after the deadline")
    say(f"  => {verdict_line(notice)}")
    say("")
    say(f"2. {DMA_ERROR.title} on {faulty.node} ({faulty.instance_id}); expect: replace, approved")
    fault = inject(world, faulty, DMA_ERROR)
    _follow(world, observer, fault, say, "the vendor confirmed the DMA fault")
    say(f"  => {verdict_line(fault)}")
    say("")
    say(f"3. nodemedic history --cluster {world.settings.name}")
    result = Result("planned", [notice, fault])
    result.problems += _history(world, [notice, fault], say)
    return result


def _deliver(world: World, machine: Machine) -> NoticeRun:
    """The saved retirement notice, for ``machine`` and due ``NOTICE_SECONDS`` from now, put
    on the default event bus as AWS Health does; the planned execution it started."""
    event: dict[str, Any] = json.loads(NOTICE.read_text())
    detail = event["detail"]
    noticed = datetime.now(UTC).replace(microsecond=0)
    deadline = noticed + timedelta(seconds=NOTICE_SECONDS)
    arn = f"arn:aws:ec2:{REGION}:{event['account']}:instance/{machine.instance_id}"
    detail["affectedEntities"][0]["entityValue"] = arn
    detail["startTime"] = format_datetime(deadline, usegmt=True)
    seen = world.watch.latest(machine.instance_id)
    run = NoticeRun(
        fault=RETIREMENT,
        machine=machine,
        rule=f"planned-{RETIREMENT.value}",
        line=detail["eventArn"],
        boot_id=seen.boot_id if seen else "",
        deadline=deadline.timestamp(),
    )
    sfn = world.aws("stepfunctions")
    planned = world.deployment.find("AWS::StepFunctions::StateMachine", "PlannedWait").ref
    run.steps["written"] = Step(
        time.time(),
        f"{event['source']} {detail['eventTypeCode']}, startTime {detail['startTime']}",
    )
    world.aws("events").put_events(
        Entries=[
            {
                "Source": event["source"],
                "DetailType": event["detail-type"],
                "Detail": json.dumps(detail),
                "Resources": event.get("resources", []),
            }
        ]
    )
    started = sfn.list_executions(stateMachineArn=planned)["executions"]
    if not started:
        run.problems.append("the notice started no planned execution")
        return run
    described = sfn.describe_execution(executionArn=started[0]["executionArn"])
    decision = json.loads(described["input"])
    run.decision_id = decision["decision_id"]
    run.steps["planned"] = Step(
        described["startDate"].timestamp(),
        f"execution {run.decision_id} waits until act_at {decision['act_at']} "
        f"(deadline {decision['deadline']})",
    )
    return run


def _follow(world: World, observer: Observer, run: FaultRun, say: Say, reason: str) -> None:
    """Show the run's steps as they happen, and answer its request for approval with
    ``nodemedic approve`` once the drained node waits."""

    def show(r: FaultRun, step: str) -> None:
        say("  " + format_step(r, step))
        if step == "written" and "planned" in r.steps:
            say("  " + format_step(r, "planned"))

    follow(
        observer,
        [run],
        show,
        timeout=FAULT_TIMEOUT + NOTICE_SECONDS,
        tick=_approver(world, observer, run, say, reason),
    )
    verify(world, run)


def _approver(
    world: World, observer: Observer, run: FaultRun, say: Say, reason: str
) -> Callable[[], None]:
    """Once the node is drained and its request mailed: show the mail, approve it. The
    approval's time is when the flow recorded it: the command returns after that."""

    def tick() -> None:
        if "drained" not in run.steps or "approved" in run.steps:
            return
        asked = [
            m
            for m in world.inbox.about(run.machine.instance_id)
            if m.outcome == approval.AWAITING and m.sent_at >= run.written_at - 1
        ]
        if not asked:
            return
        request = asked[0]
        run.steps["asked"] = Step(request.sent_at, f"mail: {request.subject}")
        say("  " + format_step(run, "asked"))
        say(f"  {'':27} {request.body.get('summary', '')}")
        said = cli(world, "approve", str(run.decision_id), "--reason", reason, "--format", "json")
        if said.returncode != 0:
            run.problems.append(f"nodemedic approve exited {said.returncode}: {said.stderr}")
            run.steps["approved"] = Step(time.time(), "not approved")
            return
        answer = json.loads(said.stdout)
        recorded = observer.state_entered(run, APPROVAL_RECORDED)
        run.steps["approved"] = Step(
            recorded or time.time(), f"nodemedic approve: by {answer['by']}: {answer['reason']}"
        )
        say("  " + format_step(run, "approved"))

    return tick


def cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    """``nodemedic ARGS --cluster NAME`` against the world's AWS, as a person runs it."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "console.cli", *args),
            *("--cluster", world.settings.name, "--region", REGION),
            *("--endpoint-url", world.endpoint),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **CREDENTIALS},
    )


def _history(world: World, runs: list[FaultRun], say: Say) -> list[str]:
    """Each run's remediation as ``nodemedic history`` shows it: who approved it, and why."""
    said = cli(world, "history", "--format", "json")
    if said.returncode != 0:
        return [f"nodemedic history exited {said.returncode}: {said.stderr.strip()}"]
    shown = json.loads(said.stdout)["remediations"]
    problems = []
    for run in runs:
        found = [e for e in shown if e["decision_id"] == run.decision_id]
        if not found or not found[0].get("approved_by"):
            problems.append(f"history names no approver of {run.machine.instance_id}")
            continue
        headline, _, _, *details = lines(found[0])
        say("  " + headline)
        say("  " + next(d for d in details if d.lstrip().startswith("approved by")))
    return problems
