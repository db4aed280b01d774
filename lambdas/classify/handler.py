"""CloudWatch Logs subscription → faults → remediation executions.

Thin: decode, name the node, hand the lines to ``service.process_batch``. A payload that
cannot be decoded raises ``MalformedPayload``: the asynchronous invocation fails and the
event lands in the dead-letter queue whole, instead of being dropped or retried forever. A
line that cannot be read costs only itself (``UnparsableLines``). AWS throttling or failing
raises ``errors.Retryable``, which Lambda retries; of the other AWS errors, those about a
line's evidence are reasons (``origin``), those of a broken deployment (the tables refused
or gone) are raised as they are.

A payload of a SageMaker HyperPod cluster's log group carries HyperPod's own findings: it is
classified for the node its stream names where the cluster lists the group, refused and
counted (``HyperPodEventsRefused``) where it does not (``nodemedic.remediate.hyperpod``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambdas.classify.aws import DynamoHeartbeats, DynamoHitCounter, execution_starter
from lambdas.classify.env import ClassifyEnv, env
from lambdas.classify.kept import KeptTable
from lambdas.classify.origin import LogsRegistrations
from lambdas.classify.throttles import CLUSTER, count_throttles
from lambdas.observability import logger, metrics, publish_count, tracer
from lambdas.subscription import MalformedPayload, decode_payload
from nodemedic.contracts.logs import IDENTITY_STREAM_RE
from nodemedic.contracts.metrics import (
    CLUSTER_DIMENSION,
    DECISIONS_STARTED_METRIC,
    FAULTS_FOUND_METRIC,
    FORGED_REASON,
    HYPERPOD_REFUSED_METRIC,
    LINES_CLASSIFIED_METRIC,
    MALFORMED_METRIC,
    REASON_DIMENSION,
    UNPARSABLE_METRIC,
    UNPROVEN_METRIC,
    UNVERIFIABLE_REASON,
)
from nodemedic.detect.classifier import default_classifier
from nodemedic.origin.identity import load_certificates
from nodemedic.origin.signing import Proven, proof
from nodemedic.remediate.batch import BatchResult, LogEvent, Origin, Starter, process_batch
from nodemedic.remediate.decision import DEFAULT_WINDOW, Identity, IdentityError, identity_of
from nodemedic.remediate.hyperpod import (
    NO_INSTANCE_REASON,
    Refused,
    hyperpod_nodes,
    hyperpod_origin,
    is_hyperpod_group,
)
from nodemedic.remediate.silence import Recent, interval_of, newest_heartbeat


@cache
def _dependencies(
    state_machine_arn: str, table: str, window: int, ledger: str | None
) -> tuple[DynamoHitCounter, Starter, IdempotencyConfig]:
    count_throttles()
    return DynamoHitCounter(table), *execution_starter(state_machine_arn, table, window, ledger)


@cache
def _registrations(cluster: str, certificates_pem: str, ledger: str | None) -> LogsRegistrations:
    """The cluster's own certificates, or AWS's for the Region the classifier runs in; the
    registrations proved kept in the ledger."""
    return LogsRegistrations(
        cluster,
        load_certificates(certificates_pem) if certificates_pem else None,
        table=KeptTable(ledger) if ledger else None,
    )


def _origin(registry: LogsRegistrations, identity: Identity, *, fresh: bool) -> Origin:
    """Proves an event of ``identity``'s stream against the keys its instance registered;
    ``fresh`` for the lines that act on the node: an earlier boot's key, known from an older
    query, must not prove them (``LogsRegistrations``)."""
    instance_id = identity.instance_id
    return lambda event: proof(
        registry, instance_id, event.timestamp_ms, event.message, fresh=fresh
    )


_RECENT = Recent()


@cache
def _heartbeats(table: str) -> DynamoHeartbeats:
    return DynamoHeartbeats(table)


def _heard(
    events: list[LogEvent], proven: Callable[[LogEvent], bool]
) -> tuple[LogEvent, Mapping[str, int]] | None:
    """The batch's last heartbeat that ``proven`` holds, and its state, if any: only a
    heartbeat line's origin is checked, so a batch without one costs no proof."""
    for event in reversed(events):
        state = newest_heartbeat([event.message])
        if state is not None and proven(event):
            return event, state
    return None


def _record_heartbeat(
    table: str | None,
    identity: Identity,
    events: list[LogEvent],
    proven: Callable[[LogEvent], bool],
) -> None:
    """Remember that the node's agent was heard: at most one write per node per half
    heartbeat interval from this process, and only for an agent's own heartbeat line, one
    signed by its node's key where the origin is enforced: a heartbeat anyone with the
    shared credential writes would hide the node's silence. The node was heard when its
    agent wrote the line, not when the line arrived: a replayed or late batch must not make
    a node that fell silent since look alive (and a line dated ahead, alive later than now)."""
    heard = _heard(events, proven) if identity.source == "kmsg" and table else None
    instance_id = identity.instance_id
    now = time.time()
    if heard is None or table is None:
        return
    event, state = heard
    if not _RECENT.due(instance_id, now, interval_of(state)):
        return
    _heartbeats(table).record(instance_id, min(now, event.timestamp_ms / 1000), state)
    _RECENT.written(instance_id, now)


UNPARSABLE_TOLD = 10
"""Unparsable lines of one batch logged with their evidence; the metric counts them all."""


def _report(cluster: str, result: BatchResult, *, by_reason: bool) -> None:
    """The unproven lines by class of reason (the unverifiable ones page) where
    ``by_reason``, and the unparsable lines with their evidence. HyperPod's events are
    never proven, by design: counting them by reason would page on every one."""
    unverifiable = len(result.unverifiable)
    for reason, count in (
        (UNVERIFIABLE_REASON, unverifiable),
        (FORGED_REASON, len(result.unproven) - unverifiable),
    ):
        if count and by_reason:
            dimensions = {CLUSTER_DIMENSION: cluster, REASON_DIMENSION: reason}
            publish_count(UNPROVEN_METRIC, count, dimensions)
    if result.unparsable:
        logger.warning(
            "unparsable lines",
            extra={
                "count": len(result.unparsable),
                "lines": [vars(line) for line in result.unparsable[:UNPARSABLE_TOLD]],
            },
        )


def _classify(
    config: ClassifyEnv,
    identity: Identity,
    events: list[LogEvent],
    context: LambdaContext,
    *,
    origin: Origin,
    enforce_origin: bool,
) -> BatchResult:
    counter, start, idempotency = _dependencies(
        config.state_machine_arn, config.idempotency_table, DEFAULT_WINDOW, config.ledger_table
    )
    idempotency.register_lambda_context(context)
    return process_batch(
        identity,
        events,
        classifier=default_classifier(),
        counter=counter,
        start=start,
        dedup_window=DEFAULT_WINDOW,
        accept_injected=config.accept_injected,
        origin=origin,
        enforce_origin=enforce_origin,
        gpu_reset=config.gpu_reset,
        heard_at=time.time(),
        stale_after=config.stale_after,
    )


def _finish(identity: Identity, result: BatchResult, *, by_reason: bool) -> dict[str, Any]:
    """The batch's metrics, its report and its summary (the invocation's result)."""
    metrics.add_dimension(name=CLUSTER_DIMENSION, value=identity.cluster)
    metrics.add_metric(name=LINES_CLASSIFIED_METRIC, unit=MetricUnit.Count, value=result.lines)
    metrics.add_metric(name=FAULTS_FOUND_METRIC, unit=MetricUnit.Count, value=result.faults)
    metrics.add_metric(
        name=DECISIONS_STARTED_METRIC, unit=MetricUnit.Count, value=len(result.started)
    )
    metrics.add_metric(name=UNPROVEN_METRIC, unit=MetricUnit.Count, value=len(result.unproven))
    metrics.add_metric(name=UNPARSABLE_METRIC, unit=MetricUnit.Count, value=len(result.unparsable))
    _report(identity.cluster, result, by_reason=by_reason)
    summary = {
        "instance_id": identity.instance_id,
        "source": identity.source,
        "lines": result.lines,
        "faults": result.faults,
        "started": result.started,
        "duplicates": result.duplicates,
        "below_threshold": result.below_threshold,
        "superseded": result.superseded,
        # Injected lines notified instead of acted on: accept_injected_faults is off.
        "capped": result.capped,
        # Reboot or replace lines whose origin was not proven (capped where enforced).
        "unproven": result.unproven,
        # Lines that are not what their stream carries: reported, not classified.
        "unparsable": [line.event_id for line in result.unparsable],
        # Reset, reboot or replace lines older than stale_after: notified, not acted on.
        "stale": result.stale,
    }
    logger.info("batch classified", extra=summary)
    return summary


def _hyperpod(
    config: ClassifyEnv, group: str, stream: str, events: list[LogEvent], context: LambdaContext
) -> dict[str, Any]:
    """HyperPod's own findings: classified for the node each is about where the cluster
    lists the group; refused and counted otherwise (not a malformed payload: nothing is
    wrong with it, and the dead-letter queue would only keep it), the rest of the batch
    classified. Never proven, they are at most notified where the origin is enforced,
    unless ``NODEMEDIC_HYPERPOD_EVENTS`` is ``act``."""
    try:
        nodes, unnamed = hyperpod_nodes(
            group, stream, events, listed=config.hyperpod_log_groups, cluster=config.cluster
        )
    except Refused as exc:
        return _refused(config, group, exc.reason, str(exc), len(events))
    refused = (
        _refused(config, group, NO_INSTANCE_REASON, f"{stream}: no instance", len(unnamed))
        if unnamed
        else {}
    )
    enforce = config.enforce_origin and not config.hyperpod_act
    classified = [
        _finish(
            identity,
            _classify(
                config, identity, found, context, origin=hyperpod_origin, enforce_origin=enforce
            ),
            by_reason=False,
        )
        for identity, found in nodes
    ]
    # A stream of one node answers as every node's stream does; a deep health check
    # stream of several nodes, one summary per node.
    if not classified or (len(classified) == 1 and not refused):
        return classified[0] if classified else refused
    return {"nodes": classified, **refused}


def _refused(config: ClassifyEnv, group: str, reason: str, why: str, count: int) -> dict[str, Any]:
    """HyperPod events not classified: counted by ``reason`` and logged."""
    # A dimension's value is never empty; a cluster that lists no group may not name itself.
    dimensions = {CLUSTER_DIMENSION: config.cluster or "-", REASON_DIMENSION: reason}
    publish_count(HYPERPOD_REFUSED_METRIC, count, dimensions)
    logger.warning(
        "refused HyperPod events", extra={"reason": why, "log_group": group, "events": count}
    )
    return {"refused": reason, "lines": count}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    config = env()
    try:
        message_type, group, stream, events = decode_payload(event)
        if message_type == "CONTROL_MESSAGE" or IDENTITY_STREAM_RE.match(stream):
            # Registrations are read back only for a key the ledger lacks (``origin``).
            return {"lines": 0}
        identity = None if is_hyperpod_group(group) else identity_of(group, stream)
        CLUSTER.set(identity.cluster if identity else config.cluster)
    except (MalformedPayload, IdentityError) as exc:
        metrics.add_metric(name=MALFORMED_METRIC, unit=MetricUnit.Count, value=1)
        logger.error("rejected payload", extra={"reason": str(exc)})
        raise MalformedPayload(str(exc)) from exc
    if identity is None:
        return _hyperpod(config, group, stream, events, context)
    registry = _registrations(identity.cluster, config.identity_certificates, config.ledger_table)
    registry.begin()
    events = registry.learn(identity.instance_id, events)
    result = _classify(
        config,
        identity,
        events,
        context,
        origin=_origin(registry, identity, fresh=True),
        enforce_origin=config.enforce_origin,
    )
    heard = _origin(registry, identity, fresh=False)
    _record_heartbeat(
        config.ledger_table,
        identity,
        events,
        lambda event: not config.enforce_origin or isinstance(heard(event), Proven),
    )
    return _finish(identity, result, by_reason=True)
