"""The ``jobs`` scenario: simulated training (``training.py``) of the jobs in
``jobplans.py``, watched by the job monitor with HyperPod's rules, and a node replaced under
an opted-in job.

Six outcomes, each from what a user sees (the jobs' annotations and Events, their pods,
their logs): a stalled log restarts its job after the recurring frequency; five losses over
2.0 restart one, four do not; a first line that never comes fires the start cut-off; a
stopPattern silences its rule; the restart policy's maxima fail a job; a node replaced under
an opted-in job resumes it from its checkpoint, and one that did not opt in is left alone.

EventBridge's one-minute schedule, which moto stores and never fires, is fired here every
``SCHEDULE_SECONDS`` (the demo's faster rate, as its settings shorten the state machine's
waits), so silences are caught in seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from nodemedic.contracts.jobs import (
    JOB_EVENT_REASONS,
    JOB_FAILED_ANNOTATION,
    JOB_RESTARTS_ANNOTATION,
    JOB_RESUMED_BY_ANNOTATION,
)
from world.aws.stack import scheduled_event
from world.kube.passes import Passes
from world.kube.workload import JOB_LABEL
from world.observe import Observer
from world.pace import pace
from world.scenarios.jobplans import LEFT_ALONE, RESTARTED, RESUMED, UNTOUCHED, Timings, monitored
from world.scenarios.kit import DMA_ERROR, Result
from world.scenarios.training import NAMESPACE, Training
from world.scenarios.verdict import judged
from world.timeline import inject
from world.world import Say, World

SCHEDULE_SECONDS = 2.0
MONITOR_TIMEOUT = 600.0
"""A deadline for a broken run only: each wait ends when what it waits for is seen, in
about a minute on an idle machine, several on a busy one (the Job controller's failure
backoff alone adds 10, 20 and 40 s to the failed job's restarts)."""
QUIET = 20.0
"""How long the jobs that must not be restarted are watched past their trigger, on an idle
machine (``world.pace``)."""


@dataclass
class JobsView:
    """What the scenario saw of each job, as it happened (epoch seconds)."""

    restarts: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    """Job → (seen at, ``nodemedic.io/job-restarts``) at each change."""
    failed: dict[str, float] = field(default_factory=dict)
    events: dict[str, list[str]] = field(default_factory=dict)
    """Job → nodemedic's Events on it, ``<reason>: <message>``."""
    lateness: list[float] = field(default_factory=list)
    """Seconds from a silence's deadline to the restart it caused."""
    schedule_runs: int = 0
    timings: Timings = field(default_factory=lambda: Timings.at(1.0))
    """The rules' timings at the world's pace when the jobs were created."""

    def to_json(self) -> dict[str, Any]:
        return {
            "restarts": {job: [text for _, text in seen] for job, seen in self.restarts.items()},
            "failed": sorted(self.failed),
            "events": self.events,
            "lateness_seconds": [round(s, 2) for s in self.lateness],
            "schedule_runs": self.schedule_runs,
            "pace": round(self.timings.pace, 2),
        }


@dataclass
class _Scene:
    world: World
    training: Training
    view: JobsView
    say: Say
    began: float = field(default_factory=time.time)


def run_jobs(world: World, say: Say) -> Result:
    training = Training(
        world.api, world.aws("logs"), world.settings.name, world.workdir / "checkpoints"
    ).start()
    schedule = Passes("job-monitor-schedule")
    view = JobsView()
    result = Result("jobs", [], jobs=view)
    monitor = world.deployment.find("AWS::Lambda::Function", "Jobs").ref
    lam = world.aws("lambda")

    def tick() -> None:
        lam.invoke(FunctionName=monitor, Payload=json.dumps(scheduled_event()))
        view.schedule_runs += 1

    schedule.start(tick, SCHEDULE_SECONDS)
    try:
        scene = _Scene(world, training, view, say)
        _monitored(scene, result.problems)
        _resumed(scene, result)
    finally:
        schedule.stop()
        training.stop()
    return result


def _monitored(scene: _Scene, problems: list[str]) -> None:
    world, training, view, say = scene.world, scene.training, scene.view, scene.say
    view.timings = timings = Timings.at(pace())
    plans = monitored(timings)
    say("")
    say(
        f"Jobs with HyperPod rules, one pod each; the schedule runs every {SCHEDULE_SECONDS:.0f}"
        f" s (one minute in AWS): {', '.join(p.name for p in plans)}"
    )
    if timings.pace > 1.5:
        say(f"  (a busy machine: the world runs {timings.pace:.1f}x slower, and so do the rules)")
    for plan in plans:
        training.create(plan)

    ended: set[str] = set()

    def done() -> bool:
        # A restarted job whose new run started has shown its outcome, and ends (its ranks
        # exit 0, and no monitor watches a finished job): a pass the busy machine delays
        # later cannot read as one more silence. The others end after the quiet watch.
        for job in set(RESTARTED) - ended:
            if view.restarts.get(job) and len(training.runs(job)) > 1:
                training.finish(job)
                ended.add(job)
        return (
            ended == set(RESTARTED)
            and "diverge" in view.failed
            and all(training.step(job) >= 25 for job in UNTOUCHED)
        )

    _watch(scene, done, timeout=MONITOR_TIMEOUT)
    quiet = QUIET * timings.pace
    quiet_until = time.time() + quiet
    _watch(scene, lambda: time.time() > quiet_until, timeout=quiet)
    for job in UNTOUCHED:
        training.finish(job)
    say(f"  {', '.join((*RESTARTED, *UNTOUCHED))}: done (ranks exit 0); the monitor leaves them")
    stall, runs = view.restarts.get("stall"), training.runs("stall")
    if stall and len(runs) > 1 and runs[1].last_line_at is not None:
        view.lateness.append(stall[0][0] - (runs[1].last_line_at + timings.frequency))
        say(
            f"  stall: restarted {view.lateness[-1]:.1f} s after its silence passed "
            f"{timings.frequency} s (schedule every {SCHEDULE_SECONDS:.0f} s, "
            "restart seen within 0.25 s)"
        )
    outcomes = {
        "stall": "(1) restarted after its progress line stopped for "
        f"{timings.frequency} s (expectedRecurringFrequencyInSeconds)",
        "spike5": "(2) restarted after 5 losses over 2.0",
        "spike4": "(2) not restarted after 4 losses over 2.0",
        "nostart": f"(3) restarted: no first line within {timings.cut_off} s "
        "(expectedStartCutOffInSeconds)",
        "evaluate": "(4) not restarted: its stopPattern ended the rule before a silence",
        "diverge": "(5) failed once its restart policy's maxima were spent",
    }
    for job, outcome in outcomes.items():
        found = _monitored_problem(world, training, view, job)
        say(f"  => {job}: {'OK' if found is None else 'FAILED'}: {outcome}")
        if found is not None:
            problems.append(f"{job}: {found}")


def _monitored_problem(world: World, training: Training, view: JobsView, job: str) -> str | None:
    restarts = view.restarts.get(job, [])
    if job in RESTARTED:
        if not restarts or restarts[-1][1] != "1 (0 full)":
            return f"restarted {restarts[-1][1]!r} times, not once" if restarts else "not restarted"
        if len(training.runs(job)) < 2:
            return "restarted, but its pods never ran again"
    elif job in UNTOUCHED:
        if restarts:
            return f"restarted ({restarts[-1][1]})"
    elif job not in view.failed:
        return "not failed"
    elif restarts[-1][1] != "3 (1 full)" or not _pods(world, job):
        return f"failed after {restarts[-1][1]!r} restarts (expected '3 (1 full)'), pods kept"
    return None


def _resumed(scene: _Scene, result: Result) -> None:
    world, training, say = scene.world, scene.training, scene.say
    say("")
    say(
        f"Job {RESUMED.name} opted in (HyperPod's annotations, unchanged), "
        f"{LEFT_ALONE.name} did not; {RESUMED.workers} ranks each, a checkpoint every "
        f"{RESUMED.checkpoint_every} steps"
    )
    # Both on the same nodes, which run no other job: the fault then hits a rank of each.
    monitored = (*RESTARTED, *UNTOUCHED, "diverge")
    busy = _nodes(world, monitored)
    prefer = [m.node for m in world.live_machines() if m.node not in busy][: RESUMED.workers]
    for plan in (RESUMED, LEFT_ALONE):
        training.create(plan, prefer)
    _watch(
        scene,
        lambda: min(training.step(RESUMED.name), training.step(LEFT_ALONE.name)) >= 25,
        timeout=MONITOR_TIMEOUT,
    )
    shared = _nodes(world, [RESUMED.name]) & _nodes(world, [LEFT_ALONE.name])
    others = _nodes(world, monitored)
    machine = next(m for m in world.live_machines() if m.node in shared - others)
    kept = {
        p.metadata.uid for p in _pods(world, LEFT_ALONE.name) if p.spec.node_name != machine.node
    }
    say(f"{DMA_ERROR.title} on {machine.node}, which runs a rank of each; expect: replace")
    run = inject(world, machine, DMA_ERROR)
    result.runs.append(run)
    judged(world, Observer(world), run, say)
    resumed = lambda: len(training.runs(RESUMED.name)) >= 2  # noqa: E731
    _watch(scene, resumed, timeout=MONITOR_TIMEOUT)
    starts = training.runs(RESUMED.name)
    problems = result.problems
    if len(starts) < 2:
        problems.append(f"{RESUMED.name}: not resumed after its node was replaced")
    else:
        last = starts[-1]
        say(
            f"  => {RESUMED.name}: step {last.last_step}, node replaced; "
            f"job resumed at step {last.step}"
        )
        if not 0 < last.step <= last.last_step:
            problems.append(f"{RESUMED.name}: resumed at step {last.step}, not its checkpoint")
    notes = _annotations(world, LEFT_ALONE.name)
    touched = sorted(k for k in notes if k in (JOB_RESTARTS_ANNOTATION, JOB_RESUMED_BY_ANNOTATION))
    still = {p.metadata.uid for p in _pods(world, LEFT_ALONE.name)}
    if touched or not kept <= still or len(training.runs(LEFT_ALONE.name)) != 1:
        problems.append(
            f"{LEFT_ALONE.name}: not left alone ({', '.join(touched) or 'its pods restarted'})"
        )
    else:
        say(
            f"  => {LEFT_ALONE.name}: OK: left to its controller "
            "(no nodemedic annotation, its ranks kept)"
        )


def _watch(scene: _Scene, done: Callable[[], bool], *, timeout: float) -> None:
    """Says what happens to the jobs (runs started, restarts, failures, Events) until
    ``done`` or ``timeout``."""
    world, training, view, say, began = (
        scene.world,
        scene.training,
        scene.view,
        scene.say,
        scene.began,
    )
    deadline = time.monotonic() + timeout
    shown = len(training.starts)
    batch = client.BatchV1Api(world.api)
    core = client.CoreV1Api(world.api)
    while True:
        stamp = f"+{time.time() - began:6.1f}s"
        for start in training.starts[shown:]:
            where = f"resumed from checkpoint step {start.step}" if start.run > 1 else "started"
            say(f"  {stamp} {start.job:<9} run {start.run}: {where}")
        shown = len(training.starts)
        for job in batch.list_namespaced_job(training.namespace).items:
            name, notes = job.metadata.name, job.metadata.annotations or {}
            text = notes.get(JOB_RESTARTS_ANNOTATION)
            seen = view.restarts.setdefault(name, [])
            if text is not None and (not seen or seen[-1][1] != text):
                seen.append((time.time(), text))
            if JOB_FAILED_ANNOTATION in notes and name not in view.failed:
                view.failed[name] = time.time()
        for event in core.list_namespaced_event(training.namespace).items:
            said = f"{event.reason}: {event.message}"
            if event.reason in JOB_EVENT_REASONS.values() or event.reason.startswith("NodeMedic"):
                known = view.events.setdefault(event.involved_object.name, [])
                if said not in known:
                    known.append(said)
                    say(f"  {stamp} {event.involved_object.name:<9} {said}")
        if done() or time.monotonic() > deadline:
            return
        time.sleep(0.25)


def _pods(world: World, job: str) -> list[client.V1Pod]:
    pods = (
        client.CoreV1Api(world.api)
        .list_namespaced_pod(NAMESPACE, label_selector=f"{JOB_LABEL}={job}")
        .items
    )
    return [p for p in pods if p.metadata.deletion_timestamp is None and p.spec.node_name]


def _nodes(world: World, jobs: Iterable[str]) -> set[str]:
    """The nodes the live pods of ``jobs`` run on."""
    return {p.spec.node_name for job in jobs for p in _pods(world, job)}


def _annotations(world: World, job: str) -> dict[str, str]:
    found = client.BatchV1Api(world.api).read_namespaced_job(job, NAMESPACE)
    return dict(found.metadata.annotations or {})
