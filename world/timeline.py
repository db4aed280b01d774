"""What happened to one injected fault, step by step: the fault (``Fault``: a line to inject
and the outcome it must have), its run (``FaultRun``: each step's time and detail), how its
line gets into a machine's kernel log (``inject``) and how a step reads (``format_step``).
``observe.py`` fills in the steps from what the world itself recorded.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from nodemedic.contracts.logs import shipped_message
from world.world import Machine, World

STEPS = (
    "written",
    "shipped",
    "classified",
    "started",
    "marked",
    "drained",
    "acted",
    "notified",
)
NOTIFY_STEPS = ("written", "shipped", "classified", "started", "notified")
FLEET_STEPS = ("written", "shipped", "classified", "started", "held")
"""A fault held as part of a fleet event: its node is given back, and the event's one mail
is about all of them, not about each."""
ACTIONS = ("replace", "reboot", "reset", "notify", "nothing", "held", "fleet")
_INJECTED = re.compile(r"^(?P<rule>\S+) -> .*?: (?P<line>.*)$")


@dataclass(frozen=True)
class Fault:
    """One line to inject (``nodemedic inject <kind> <value>``) and what must come of it."""

    kind: str
    value: str
    expect: str
    """``replace``, ``reboot``, ``reset`` (its GPU reset in place, the node given back at
    the same boot), ``notify``, ``nothing``, ``held`` (a replacement the breaker holds
    until its hold runs out, the node quarantined meanwhile, never drained, and given back)
    or ``fleet`` (held, part of a fleet event)."""
    title: str

    def __post_init__(self) -> None:
        if self.expect not in ACTIONS:
            raise ValueError(f"expect must be one of {ACTIONS}, not {self.expect!r}")

    @property
    def action(self) -> str:
        """What the classifier decides for the line."""
        return "replace" if self.expect == "held" else self.expect

    @property
    def steps(self) -> tuple[str, ...]:
        if self.expect in ("replace", "reboot", "reset"):
            return STEPS
        if self.expect in ("notify", "held"):
            return NOTIFY_STEPS
        if self.expect == "fleet":
            return FLEET_STEPS
        return STEPS[:3]


@dataclass
class Step:
    at: float
    detail: str = ""


@dataclass
class FaultRun:
    """One injected fault and everything observed about it so far."""

    fault: Fault
    machine: Machine
    rule: str
    line: str
    """The line as the agent ships it and a decision quotes it: ``nodemedic inject`` wrote
    a plain line, which no kernel logged, so it carries the injected mark."""
    boot_id: str
    """The Node's boot id when the line was written."""
    steps: dict[str, Step] = field(default_factory=dict)
    where: tuple[str, str] | None = None
    """(log group, stream) the line was written to, where not the node's own kernel log
    (its agent ships that to ``<instance>/kmsg`` of the cluster's node log group)."""
    decision_id: str | None = None
    outcome: str | None = None
    problems: list[str] = field(default_factory=list)
    done: bool = False

    @property
    def written_at(self) -> float:
        return self.steps["written"].at

    @property
    def ok(self) -> bool:
        return self.done and not self.problems

    def since_written(self, step: str) -> float | None:
        found = self.steps.get(step)
        return None if found is None else found.at - self.written_at

    def label(self, step: str) -> str:
        if step == "acted":
            return {"reboot": "rebooted", "reset": "GPU reset"}.get(self.fault.expect, "replaced")
        return {
            "written": "line written",
            "shipped": "shipped",
            "classified": "classified",
            "started": "execution started",
            "marked": "node marked",
            "drained": "drained",
            "asked": "approval asked",
            "approved": "approved",
            "notified": "notified",
            "held": "held",
        }[step]

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": f"{self.fault.kind} {self.fault.value}",
            "title": self.fault.title,
            "expect": self.fault.expect,
            "rule": self.rule,
            "line": self.line,
            "instance_id": self.machine.instance_id,
            "node": self.machine.node,
            "decision_id": self.decision_id,
            "outcome": self.outcome,
            "ok": self.ok,
            "problems": list(self.problems),
            "seconds": {s: _rounded(self.since_written(s)) for s in self.fault.steps},
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def inject(world: World, machine: Machine, fault: Fault) -> FaultRun:
    """Write the fault's line into the machine's kernel log with ``nodemedic inject``."""
    kmsg = world.agents.kmsg(machine.instance_id)
    seen = world.watch.latest(machine.instance_id)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "console.cli", "inject", fault.kind, fault.value),
            *(f"--to={kmsg}", f"--instance-id={machine.instance_id}"),
            f"--hostname={machine.node.split('.')[0]}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = _INJECTED.match(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"nodemedic inject failed ({done.returncode}): {done.stderr.strip()}")
    run = FaultRun(
        fault=fault,
        machine=machine,
        rule=found["rule"],
        line=shipped_message(found["line"], None),
        boot_id=seen.boot_id if seen else "",
    )
    run.steps["written"] = Step(kmsg.stat().st_mtime, found["line"])
    return run


def format_step(run: FaultRun, step: str, *, since: float | None = None) -> str:
    """``+1.23s  node marked       cordoned, ...``; times from ``since`` (default: the
    line written)."""
    found = run.steps[step]
    origin = run.written_at if since is None else since
    detail = found.detail if step != "written" else _shorten(found.detail, 90)
    return f"+{found.at - origin:6.2f}s  {run.label(step):<17} {detail}"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
