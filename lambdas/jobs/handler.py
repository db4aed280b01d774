"""The job monitor: Container Insights' application log deliveries (match-driven rules) and
an EventBridge schedule (time-driven rules: a line that never comes sends no event).

Thin: decode, group the lines by pod, find each pod's job by its controller owner reference
(the cluster's record, not the line's labels), record a checkpoint a drain waits for
(``checkpoint.record_checkpoint``), hand each job to ``service.monitor``, publish what was
done. A payload that cannot be decoded, or comes from another log group, raises
``MalformedPayload`` and lands in the dead-letter queue whole, as the classifier's do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from kubernetes import client

from lambdas.jobs.checkpoint import record_checkpoint
from lambdas.jobs.env import JobsEnv, env
from lambdas.jobs.nodes import NodeReport, report
from lambdas.jobs.service import Acted, Cluster, measure, monitor
from lambdas.jobs.store import JobStore
from lambdas.kube.client import api_client
from lambdas.kube.jobs import Job, monitored_jobs
from lambdas.kube.owners import placement
from lambdas.observability import logger, metrics, publish, tracer
from lambdas.subscription import MalformedPayload, decode_payload
from nodemedic.contracts.jobs import (
    APPLICATION_LOG_GROUP_RE,
    FAULT_DETECTION_SECONDS_METRIC,
    JOB_DIMENSIONS,
    JOB_NODE_HARDWARE_METRIC,
    JOB_RESTARTS_HELD_METRIC,
    JOBS_FAILED_METRIC,
    JOBS_RESTARTED_METRIC,
    RESTART_SECONDS_METRIC,
)
from nodemedic.contracts.metrics import MALFORMED_METRIC
from nodemedic.jobs.hardware import strongest
from nodemedic.jobs.records import lines_by_pod

SCHEDULED = "Scheduled Event"
MAX_PODS = 64
"""Pods a delivery's lines are read for (one API call each, at most). A delivery is one log
stream, one container's, so more is a malformed or hostile batch; the rest are dropped."""
Work = list[tuple[Job, list[tuple[float, str]]]]
"""Each job of a run with the lines it is given (none on a scheduled run)."""


@cache
def _store(table: str) -> JobStore:
    return JobStore(table)


def _notify(topic: str | None) -> Callable[[str, str], None]:
    def notify(subject: str, message: str) -> None:
        if topic:
            boto3.client("sns").publish(TopicArn=topic, Subject=subject[:100], Message=message)

    return notify


def _cluster(name: str, config: JobsEnv) -> Cluster:
    api = api_client(config.access)
    return Cluster(
        name,
        client.CoreV1Api(api),
        client.BatchV1Api(api),
        _notify(config.topic_arn),
        config.limits,
    )


def _lines(
    event: dict[str, Any], ledger_table: str
) -> tuple[str, dict[tuple[str, str], list[tuple[float, str]]]]:
    """(cluster, lines by (namespace, pod)) of a subscription delivery; every delivery, of a
    job's line or not, is news that the log group is alive (the job breaker's silence)."""
    message_type, group, _stream, events = decode_payload(event)
    found = APPLICATION_LOG_GROUP_RE.match(group)
    if found is None:
        raise MalformedPayload(f"log group {group!r} is no Container Insights application group")
    if message_type != "DATA_MESSAGE":
        return found["cluster"], {}
    _store(ledger_table).heard(found["cluster"], time.time())
    return found["cluster"], lines_by_pod((raw.timestamp_ms / 1000, raw.message) for raw in events)


def _by_job(
    core: client.CoreV1Api, by_pod: dict[tuple[str, str], list[tuple[float, str]]]
) -> tuple[Work, list[NodeReport]]:
    """Each pod's lines given to the job that controls it, as the API says (one read per pod
    of the delivery, at most ``MAX_PODS``); lines of a pod no job controls are dropped. The
    same read places the pod on its Node: a hardware error in its lines is reported
    about that node (``lambdas.jobs.nodes``)."""
    if len(by_pod) > MAX_PODS:
        logger.warning("pods past the limit dropped", extra={"pods": len(by_pod)})
    jobs: dict[str, tuple[Job, list[tuple[float, str]]]] = {}
    reports: list[NodeReport] = []
    for (namespace, pod), lines in list(by_pod.items())[:MAX_PODS]:
        job, node = placement(core, namespace, pod)
        if job is None:
            continue
        jobs.setdefault(job.uid, (job, []))[1].extend(lines)
        finding = strongest(lines)
        if finding is not None and node:
            reports.append(NodeReport(job, namespace, pod, node, finding))
    return list(jobs.values()), reports


def _reported(
    cluster_name: str, kube: Cluster, reports: list[NodeReport], now: float
) -> list[dict[str, str]]:
    """The node reports told this time (one a node, rule and hour), each counted."""
    told = [r for r in reports if report(kube.core, kube.notify, cluster_name, r, now)]
    for found in told:
        job = f"{found.job.namespace}/{found.job.name}"
        _publish(cluster_name, job, [(JOB_NODE_HARDWARE_METRIC, MetricUnit.Count, 1.0)])
        logger.warning("job reported a node hardware error", extra=found.as_summary())
    return [found.as_summary() for found in told]


def _publish(cluster_name: str, job: str, figures: list[tuple[str, MetricUnit, float]]) -> None:
    for name, unit, value in figures:
        publish(name, unit, value, dict(zip(JOB_DIMENSIONS, (cluster_name, job), strict=True)))


def _published(cluster_name: str, acted: Acted) -> None:
    """A held verdict did nothing: counted as held, no detection latency."""
    if acted.action == "held":
        _publish(cluster_name, acted.job, [(JOB_RESTARTS_HELD_METRIC, MetricUnit.Count, 1.0)])
        return
    count = JOBS_FAILED_METRIC if acted.action == "fail" else JOBS_RESTARTED_METRIC
    _publish(
        cluster_name,
        acted.job,
        [
            (count, MetricUnit.Count, 1.0),
            (FAULT_DETECTION_SECONDS_METRIC, MetricUnit.Seconds, acted.latency),
        ],
    )


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    config = env()
    now = time.time()
    scheduled = isinstance(event, dict) and event.get("detail-type") == SCHEDULED
    if scheduled:
        cluster_name = config.cluster
        kube = _cluster(cluster_name, config)
        work: Work = [(job, []) for job in monitored_jobs(kube.batch)]
        node_evidence: list[dict[str, str]] = []
    else:
        try:
            cluster_name, by_pod = _lines(event, config.ledger_table)
        except MalformedPayload as exc:
            metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
            logger.error("rejected payload", extra={"reason": str(exc)})
            raise
        if not by_pod:
            return {"jobs": 0, "acted": []}
        kube = _cluster(cluster_name, config)
        work, reports = _by_job(kube.core, by_pod)
        node_evidence = _reported(cluster_name, kube, reports, now)
    store = _store(config.ledger_table)
    acted: list[Acted] = []
    restarted: dict[str, float] = {}
    skipped: list[str] = []
    for job, lines in work:
        key = f"{job.namespace}/{job.name}"
        try:
            if record_checkpoint(kube.batch, job, lines) is not None:
                logger.info("checkpoint saved for a drain", extra={"job": key})
            done = monitor(job, lines, now, store, kube)
            latency = measure(job, now, store, kube) if scheduled else None
        except client.ApiException as exc:
            if not scheduled:
                raise  # a delivery is retried whole
            # The next run tries again in a minute; one job (say, in a namespace being
            # deleted) must not stop the cluster's monitoring.
            logger.warning("job skipped this run", extra={"job": key, "reason": str(exc)})
            skipped.append(key)
            continue
        if done is not None:
            acted.append(done)
            _published(cluster_name, done)
        if latency is not None:
            restarted[key] = latency
            _publish(cluster_name, key, [(RESTART_SECONDS_METRIC, MetricUnit.Seconds, latency)])
    summary = {
        "jobs": len(work),
        "acted": [vars(a) for a in acted],
        "running_again": restarted,
        "skipped": skipped,
        "node_evidence": node_evidence,
    }
    logger.info("jobs monitored", extra=summary)
    return summary
