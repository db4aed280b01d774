"""What the demo's scenarios share: the result a scenario hands back, the healthy machines
it picks to fail, the fault most of them inject and how long one fault may take. The
scenarios stand on this module (and on ``verdict``), the registry (``scenarios``) on them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from console.cli import history
from world.aws.motoserver import CREDENTIALS, REGION
from world.aws.stack import scheduled_event
from world.timeline import Fault, FaultRun
from world.world import Machine, World

DMA_ERROR = Fault("neuron", "DMA_ERROR", "replace", "Neuron DMA engine error")
XID_48 = Fault("xid", "48", "reboot", "GPU uncorrectable double-bit ECC error (Xid 48)")
XID_79 = Fault("xid", "79", "replace", "GPU has fallen off the bus (Xid 79)")
FAULT_TIMEOUT = 300.0
"""A deadline for a broken run only: a remediation is followed until it is done, in seconds
on an idle machine, minutes on a busy one."""


@dataclass
class BreakerView:
    """The breaker as the ledger shows it, sampled while the storm runs."""

    limit: int
    samples: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)

    @property
    def most(self) -> int:
        return max((len(h) for _, h in self.samples), default=0)

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "most_in_remediation": self.most}


@dataclass
class Result:
    scenario: str
    runs: list[FaultRun]
    problems: list[str] = field(default_factory=list)
    breaker: BreakerView | None = None
    most_out_at_once: int | None = None
    """Storm: the most nodes cordoned and not yet replaced at one time (Node watch)."""
    held: list[str] = field(default_factory=list)
    """Storm: instances whose decision the breaker held."""
    pacing: dict[str, Any] | None = None
    """Spread: the settings shown, the breaker's states as they changed, its pages."""
    fleet_mail: list[list[str]] = field(default_factory=list)
    """Storm: the nodes each fleet event mail listed (one mail is right)."""
    jobs: Any = None
    """Jobs: what came of each training job (``jobscenario.JobsView``)."""

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.ok for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "scenario": self.scenario,
            "ok": self.ok,
            "problems": list(self.problems),
            "faults": [r.to_json() for r in self.runs],
        }
        if self.breaker is not None:
            found["breaker"] = {
                **self.breaker.to_json(),
                "most_out_at_once": self.most_out_at_once,
                "held": list(self.held),
            }
            found["fleet_mail"] = [list(nodes) for nodes in self.fleet_mail]
        if self.pacing is not None:
            found["pacing"] = self.pacing
        if self.jobs is not None:
            found["jobs"] = self.jobs.to_json()
        return found


def targets(world: World, count: int) -> list[Machine]:
    """``count`` healthy machines, those running training workers first, in node order."""
    workers = world.job.nodes_running_workers()
    healthy = [m for m in world.live_machines() if _healthy(world, m)]
    healthy.sort(key=lambda m: (m.node not in workers, m.node))
    if len(healthy) < count:
        raise RuntimeError(f"{count} healthy nodes needed, {len(healthy)} available")
    return healthy[:count]


def _healthy(world: World, machine: Machine) -> bool:
    seen = world.watch.latest(machine.instance_id)
    return (
        seen is not None
        and seen.event != "DELETED"
        and seen.ready
        and not seen.unschedulable
        and not seen.tainted
    )


def history_entries(world: World) -> tuple[int, list[dict[str, Any]]]:
    """``nodemedic history --format json`` (the CLI's own function) over the world's ledger:
    its exit code and the remediations it shows."""
    parser = argparse.ArgumentParser()
    history.configure(parser)
    args = parser.parse_args(
        [
            *("--cluster", world.settings.name, "--table", world.ledger_table),
            *("--region", REGION),
            *("--endpoint-url", world.endpoint, "--format", "json"),
        ]
    )
    out = io.StringIO()
    with mock.patch.dict(os.environ, CREDENTIALS), contextlib.redirect_stdout(out):
        code = history.run(args)
    return code, printed_remediations(out.getvalue())


def printed_remediations(printed: str) -> list[dict[str, Any]]:
    """The remediations of the history's one JSON object in what stdout got meanwhile: the
    Lambda handlers run in this process, and their log and metric lines land there too,
    before, after or right against it (a print's text and its newline are two writes)."""
    decoder = json.JSONDecoder()
    start = printed.find(HISTORY_START)
    while start >= 0:
        with contextlib.suppress(ValueError):
            found, _ = decoder.raw_decode(printed, start)
            if isinstance(found, dict) and "remediations" in found:
                return list(found["remediations"])
        start = printed.find(HISTORY_START, start + 1)
    return []


HISTORY_START = '{"cluster": '
"""How ``nodemedic history --format json``'s object begins (its keys are sorted)."""


RECONCILE = "RemediationAftercareReconcile"
"""The reconcile's state machine (logical id prefix): its schedule fires every minute."""


def run_as_scheduled(world: World, machine_prefix: str, timeout: float) -> dict[str, Any] | None:
    """Start the state machine ``machine_prefix`` names as its EventBridge schedule would (the
    local world's moto fires no schedule) and wait for its end: its output, None when it ran
    past ``timeout`` seconds."""
    sfn = world.aws("stepfunctions")
    arn = world.deployment.find("AWS::StepFunctions::StateMachine", machine_prefix).ref
    started = sfn.start_execution(
        stateMachineArn=arn, name=secrets.token_hex(8), input=json.dumps(scheduled_event())
    )["executionArn"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = sfn.describe_execution(executionArn=started)
        if ended["status"] != "RUNNING":
            return dict(json.loads(ended.get("output") or "{}"))
        time.sleep(0.25)
    return None
