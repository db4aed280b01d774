"""``spread``: fatal faults one after another, as real hardware fails, and one more than a
node group may replace in an hour.

Each fault is injected on its own node once the one before it has its outcome: as many
Neuron uncorrectable errors (each a different one: ``REPLACED``) as
``replacements_per_hour`` allows are replaced; the next one, a DMA error, hits the
limit, trips the cluster's breaker (one page) and is held until its ``breaker_hold`` runs
out, its node quarantined meanwhile (cordoned and tainted, not drained) and given back then.
Once the breaker has cooled down (``breaker_cooldown``), an Xid 48 is admitted, which closes
the breaker again, and its node is rebooted: the breaker paces a wave and recovers, it does
not latch. The demo's hold and cooldown are seconds
(``scenarios.SETTINGS``), and the scenario says so. The rate windows are clock hours, so
the scenario first waits for the next hour when this one is nearly over.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from console.cli.breaker import status
from nodemedic.remediate.breaker import windows
from nodemedic.settings import ClusterSettings
from world.aws.inbox import Notification
from world.observe import Observer, follow
from world.pace import pace
from world.scenarios.kit import DMA_ERROR, Result, targets
from world.scenarios.verdict import verdict_line, verify
from world.timeline import Fault, FaultRun, format_step, inject
from world.world import Machine, Say, World

REPLACED = tuple(
    Fault("neuron", error, "replace", title)
    for error, title in (
        ("SRAM_UNCORRECTABLE_ERROR", "Neuron SRAM uncorrectable error"),
        ("NC_UNCORRECTABLE_ERROR", "Neuron core uncorrectable error"),
        ("HBM_UNCORRECTABLE_ERROR", "Neuron HBM uncorrectable error"),
    )
)
"""Distinct faults, one per node: the same fault on ``fleet_min_nodes`` nodes within
``fleet_window`` would be a fleet event, held as a whole, not paced by the breaker."""
HELD = dataclasses.replace(
    DMA_ERROR, expect="held", title="Neuron DMA engine error, over the hourly limit"
)
REBOOT = Fault("xid", "48", "reboot", "GPU uncorrectable double-bit ECC error (Xid 48)")
SPREAD_TIMEOUT = 300.0
"""A deadline for a broken run only, over the five faults one after another: about a minute
on an idle machine (``world.pace`` stretches it on a busy one)."""
WINDOW_NEEDED = 120.0
"""Seconds of the current clock hour the scenario needs on an idle machine: its
replacements and the one held must fall in one rate window."""
SHOWN_SETTINGS = ("replacements_per_hour", "breaker_cooldown", "breaker_hold")


class _Spread:
    """The faults still to inject, each once the world is ready for it, and the breaker as
    ``nodemedic breaker status`` shows it, sampled on every round."""

    def __init__(self, world: World, say: Say, plan: list[tuple[Fault, Machine]]) -> None:
        self.world = world
        self.say = say
        self.plan = plan
        self.runs: list[FaultRun] = []
        self.states: list[dict[str, Any]] = []
        self.began = time.time()
        self._dynamodb = world.aws("dynamodb")
        self._shown: tuple[Any, ...] = ()
        self._mail: set[Notification] = set()

    def pending(self) -> bool:
        return len(self.runs) < len(self.plan)

    def tick(self) -> None:
        state = self._sample()
        self._notices()
        if not self.pending() or not all(r.done for r in self.runs):
            return
        fault, machine = self.plan[len(self.runs)]
        if fault.expect == "reboot" and state == "tripped":
            return
        self.say(f"  {machine.node:<28} {fault.title}; expect: {fault.expect}")
        self.runs.append(inject(self.world, machine, fault))

    def show(self, run: FaultRun, step: str) -> None:
        self.say(f"  {run.machine.node:<28} " + format_step(run, step, since=self.began))

    def _notices(self) -> None:
        """The breaker's page and its notices that it holds a decision, as they arrive (the
        outcomes show as each fault's ``notified`` step)."""
        for message in self.world.inbox.messages():
            if message in self._mail or message.sent_at < self.began - 1:
                continue
            self._mail.add(message)
            if message.outcome == "tripped" or (
                message.outcome == "held" and "seconds" not in message.body
            ):
                self.say(f"  {'mail':<28} +{message.sent_at - self.began:6.2f}s  {message.subject}")

    def _sample(self) -> str:
        now = time.time()
        found = status(self._dynamodb, self.world.ledger_table, self.world.settings.name, int(now))
        hour, _ = windows(int(now))
        rates = {r["action"]: r["started"] for r in found["rates"] if r["window"] == hour}
        shown = (found["state"], found["reason"], tuple(sorted(rates.items())))
        if shown != self._shown:
            self._shown = shown
            started = ", ".join(f"{a} {n}" for a, n in sorted(rates.items())) or "none"
            why = f" ({found['reason']}; cooling until {found['cooled_until']})"
            self.say(
                f"  {'breaker':<28} +{now - self.began:6.2f}s  {found['state']}"
                f"{why if found['state'] == 'tripped' else ''}; started this hour: {started}"
            )
        if not self.states or self.states[-1]["state"] != found["state"]:
            self.states.append(
                {
                    "at": round(now - self.began, 3),
                    "state": found["state"],
                    "reason": found["reason"],
                }
            )
        return str(found["state"])


def run_spread(world: World, say: Say) -> Result:
    settings = world.settings
    limit = settings.replacements_per_hour
    defaults = {f.name: f.default for f in dataclasses.fields(ClusterSettings)}
    shown = {name: getattr(settings, name) for name in SHOWN_SETTINGS}
    say("")
    say(
        f"Spread: {limit + 1} Neuron uncorrectable errors, one after another, each on its own "
        f"node, one more than a group may replace per hour; then an Xid 48 once the breaker "
        f"has cooled."
    )
    say(
        "Settings: "
        + ", ".join(f"{name} {value} (default {defaults[name]})" for name, value in shown.items())
        + "; the demo's hold and cooldown are seconds so that it shows the breaker recover."
    )
    slow = pace()
    if slow > 1.5:
        say(f"  (a busy machine: the world runs {slow:.1f}x slower, and the scenario waits longer)")
    _within_one_window(say, WINDOW_NEEDED * slow)
    faults = [*(REPLACED[i % len(REPLACED)] for i in range(limit)), HELD, REBOOT]
    spread = _Spread(world, say, list(zip(faults, targets(world, len(faults)), strict=True)))
    follow(
        Observer(world),
        spread.runs,
        spread.show,
        timeout=SPREAD_TIMEOUT * slow,
        tick=spread.tick,
        pending=spread.pending,
    )
    for run in spread.runs:
        verify(world, run)
    pages = [
        m
        for m in world.inbox.messages()
        if m.outcome == "tripped" and m.sent_at >= spread.began - 1
    ]
    states = [s["state"] for s in spread.states]
    recovered = "tripped" in states and "closed" in states[states.index("tripped") :]
    result = Result("spread", spread.runs)
    result.pacing = {
        "settings": shown,
        "replaced": [r.machine.instance_id for r in spread.runs if r.outcome == "replaced"],
        "held": [r.machine.instance_id for r in spread.runs if r.outcome == "held"],
        "pages": [{"subject": m.subject, "reason": m.body.get("reason")} for m in pages],
        "states": spread.states,
        "recovered": recovered,
    }
    if spread.pending():
        result.problems.append(f"{len(spread.plan) - len(spread.runs)} fault(s) never injected")
    if len(pages) != 1:
        result.problems.append(f"{len(pages)} breaker pages, expected exactly one")
    if not recovered:
        result.problems.append("the breaker did not trip and then close again")
    say("")
    say(
        f"  => {len(result.pacing['replaced'])} replaced (replacements_per_hour {limit}), "
        f"{len(result.pacing['held'])} held; the breaker paged {len(pages)} time(s)"
        + (f": {pages[0].body.get('reason')}" if pages else "")
    )
    say("  => breaker " + " -> ".join(states) + ("; recovered" if recovered else "; NOT recovered"))
    for run in spread.runs:
        say(f"  => {run.machine.node}: {verdict_line(run)}")
    return result


def _within_one_window(say: Say, needed: float) -> None:
    """Wait for the next clock hour when less than ``needed`` seconds of this one are left."""
    left = 3600 - time.time() % 3600
    if left < needed:
        say(f"Waiting {left:.0f}s for the next clock hour: the rate limits count per hour.")
        time.sleep(left + 1)
