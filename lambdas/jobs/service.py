"""One job's turn: its rules from its annotations, its state from the ledger, lines or time
applied, and at most one restart (or failure) for the verdict. The Kubernetes calls are
lambdas/kube/jobs.py's; the arithmetic is nodemedic/jobs'."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from kubernetes import client

from lambdas.jobs.store import Conflict, JobStore, Stored
from lambdas.kube.jobs import Job, annotate, pods_of, pods_seen, record_event, restart
from nodemedic.contracts.jobs import (
    JOB_EVENT_REASONS,
    JOB_FAILED_ANNOTATION,
    JOB_RESTARTS_ANNOTATION,
    LOG_MONITORING_ANNOTATION,
    RUN_POLICY_ANNOTATION,
)
from nodemedic.jobs.breaker import JobLimits, Judgement, judge
from nodemedic.jobs.evaluate import RuleState, evidence_time
from nodemedic.jobs.latency import WATCH_SECONDS, restart_latency, running_again
from nodemedic.jobs.monitor import current, judge_lines, judge_time, running_from, verdict_of
from nodemedic.jobs.restart import Action, RunPolicy, after, next_action
from nodemedic.jobs.resume import restarts_text, run_policy
from nodemedic.jobs.rules import Rule, RuleError, parse_rules

Notify = Callable[[str, str], None]
"""(subject, message) to the people who run the cluster."""
_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Acted:
    job: str
    """``<namespace>/<name>``."""
    rule: str
    verdict: str
    action: Action | Literal["held"]
    """``held``: the job breaker (or monitor-only) held the verdict; nothing was done."""
    deleted: list[str]
    latency: float
    """Seconds from the evidence to the action."""
    restarts: int


def config_of(job: Job) -> tuple[tuple[Rule, ...], RunPolicy] | None:
    """The job's rules and run policy; None when it asks for no monitoring."""
    notes = job.annotations
    policy_text = notes.get(RUN_POLICY_ANNOTATION)
    rules_text = notes.get(LOG_MONITORING_ANNOTATION)
    if rules_text is None and (
        policy_text is None or "logMonitoringConfiguration" not in policy_text
    ):
        return None
    policy = run_policy(notes)
    rules = parse_rules(rules_text if rules_text is not None else policy_text or "")
    return rules, policy


@dataclass(frozen=True)
class Cluster:
    name: str
    core: client.CoreV1Api
    batch: client.BatchV1Api
    notify: Notify
    limits: JobLimits


def monitor(
    job: Job,
    lines: Sequence[tuple[float, str]],
    now: float,
    store: JobStore,
    cluster: Cluster,
) -> Acted | None:
    """Applies ``lines`` (log time, text; none for a scheduled run) and the time ``now`` to
    the job's rules; acts on a verdict the job breaker admits. A job with invalid rules gets
    an Event saying why."""
    try:
        config = config_of(job)
    except RuleError as exc:
        record_event(cluster.core, job, JOB_EVENT_REASONS["invalid"], str(exc), warning=True)
        return None
    if config is None:
        return None
    rules, policy = config
    for _ in range(_CONFLICT_RETRIES):
        stored = store.load(job.namespace, job.name)
        if stored.history.failed:
            return None
        epoch = job.started_at if stored.epoch is None else stored.epoch
        run = current(rules, stored.states, epoch, _cut_off_from(job, stored, epoch, now, cluster))
        states = judge_time(rules, judge_lines(rules, run, lines), now)
        try:
            store.save_states(job.namespace, job.name, states, stored)
        except Conflict:
            continue
        found = verdict_of(states)
        if found is None:
            return None
        rule = next(r for r in rules if r.name == found[0])
        return _act(
            job,
            rule=rule,
            state=found[1],
            policy=policy,
            stored=stored,
            epoch=epoch,
            now=now,
            store=store,
            cluster=cluster,
            by_schedule=not lines,
        )
    raise RuntimeError(f"{job.namespace}/{job.name}: too many concurrent writers")


def _cut_off_from(
    job: Job, stored: Stored, epoch: float, now: float, cluster: Cluster
) -> float | None:
    """While the run's restart is watched (its new pods not all seen running by a schedule
    run yet), when its start cut-off counts from, read from the pods; None otherwise (the
    states keep what they had)."""
    watch = stored.watch
    if not watch or float(watch["at"]) != epoch:
        return None
    running = running_again(set(watch["replaced"]), pods_seen(cluster.core, job))
    return running_from(epoch, running, now)


def _act(
    job: Job,
    *,
    rule: Rule,
    state: RuleState,
    policy: RunPolicy,
    stored: Stored,
    epoch: float,
    now: float,
    store: JobStore,
    cluster: Cluster,
    by_schedule: bool,
) -> Acted | None:
    """``epoch``: when the job's current run began, as its rules counted."""
    decision = f"{job.namespace}/{job.name}#{epoch}#{rule.name}#{state.verdict}"
    what = (
        f"rule {rule.name!r}: job {state.verdict} ({state.evidence or 'no matching line in time'})"
    )
    judged = admission(store, cluster, job.namespace, decision, now, by_schedule=by_schedule)
    if judged.verdict != "admit":
        # Nothing done to the job but an Event; its rules start over from ``now`` (its
        # restart counts unchanged), so a job that really hangs is found again after the hold.
        if not store.claim(job.namespace, job.name, stored, stored.history, now):
            return None
        message = f"{what}; held: {judged.reason}"
        record_event(cluster.core, job, JOB_EVENT_REASONS["held"], message, warning=True)
        return _acted(
            job, rule, state, now, action="held", deleted=[], restarts=stored.history.total_restarts
        )
    action = next_action(policy, stored.history, now)
    history = after(stored.history, action, now)
    # A restart starts a new run (its rules count again from now); a failure keeps the run.
    if not store.claim(
        job.namespace, job.name, stored, history, now if action != "fail" else epoch
    ):
        return None  # another delivery or run acted on this verdict already
    deleted = []
    if action != "fail":
        pods = pods_of(cluster.core, job)
        replaced = [pod.metadata.uid for pod in pods]
        deleted = restart(cluster.core, job, action, policy.clean_pod_policy, pods)
        store.watch(job.namespace, job.name, {"at": now, "replaced": replaced}, stored)
    message = (
        f"{what}; {action}"
        f" ({history.total_restarts} restart(s), {history.full_restarts} full, of"
        f" jobMaxRetryCount {policy.job_max_retry_count})"
    )
    notes = {JOB_RESTARTS_ANNOTATION: restarts_text(history.total_restarts, history.full_restarts)}
    if action == "fail":
        notes[JOB_FAILED_ANNOTATION] = message[:1024]
    annotate(cluster.batch, job, notes)
    record_event(cluster.core, job, JOB_EVENT_REASONS[action], message, warning=True)
    if action == "fail":
        cluster.notify(f"nodemedic failed job {job.namespace}/{job.name}", message)
    return _acted(
        job, rule, state, now, action=action, deleted=deleted, restarts=history.total_restarts
    )


def _acted(
    job: Job,
    rule: Rule,
    state: RuleState,
    now: float,
    *,
    action: Action | Literal["held"],
    deleted: list[str],
    restarts: int,
) -> Acted:
    return Acted(
        job=f"{job.namespace}/{job.name}",
        rule=rule.name,
        verdict=str(state.verdict),
        action=action,
        deleted=deleted,
        latency=max(0.0, now - (evidence_time(rule, state) or now)),
        restarts=restarts,
    )


def admission(
    store: JobStore,
    cluster: Cluster,
    namespace: str,
    decision: str,
    now: float,
    *,
    by_schedule: bool,
) -> Judgement:
    """The job breakers' judgement of ``decision`` (a verdict on a job in ``namespace``),
    written to the ledger; the verdict that trips a closed breaker sends the one
    notification of the trip."""
    for _ in range(_CONFLICT_RETRIES):
        stored = store.load_breaker(cluster.name)
        judged = judge(
            stored.state,
            namespace=namespace,
            decision=decision,
            now=now,
            limits=cluster.limits,
            heard_at=stored.heard_at,
            by_schedule=by_schedule,
        )
        if judged.state == stored.state:
            return judged
        try:
            store.save_breaker(cluster.name, judged.state, stored)
        except Conflict:
            continue
        if judged.page:
            whose = f"{judged.scope} of cluster {cluster.name}"
            if judged.scope == "cluster":
                whose = f"cluster {cluster.name}"
            cluster.notify(
                f"nodemedic job breaker tripped: {whose}",
                f"{judged.reason}; every job restart of {whose} is held for"
                f" {cluster.limits.cooldown} s, then until the limits have room again."
                " Held jobs get a NodeMedicRestartHeld Event; their rules start over.",
            )
        return judged
    raise RuntimeError(f"cluster {cluster.name}: too many concurrent job breaker writers")


def measure(job: Job, now: float, store: JobStore, cluster: Cluster) -> float | None:
    """RestartLatencySeconds of the job's last restart, once (None until its pods all run,
    or when another run published it, or when it never came within ``WATCH_SECONDS``)."""
    stored = store.load(job.namespace, job.name)
    if not stored.watch:
        return None
    at = float(stored.watch["at"])
    latency = restart_latency(at, set(stored.watch["replaced"]), pods_seen(cluster.core, job))
    if latency is None and now - at < WATCH_SECONDS:
        return None
    return latency if store.watch(job.namespace, job.name, {}, stored) else None
