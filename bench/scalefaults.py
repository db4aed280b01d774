"""Faults during a scale storm, and what a person checks after it.

During: the API server refuses the remediator, both ways a busy or broken control plane
does. Its priority and fairness sheds the remediator's load (one request at a time, HTTP
429 for the rest: ``world.kube.shedding``), and an admission webhook on every Node fails
the remediator's first writes (HTTP 500: ``world.kube.webhook``). Each refusal is counted as
the pipeline counts it (``KubeRefused``, by status) and retried by the state machine.

After: the reconcile runs as its schedule would, and must find no node left cordoned
without a remediation at work on it (``StrandedNodes``); the dashboard's remediations by
outcome must agree with the ledger's decision records, which ``nodemedic history`` shows.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.config import Config

from console.cli.history import records
from console.dashboard.read import board
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.contracts.stack import dashboard_name
from world.aws.motoserver import REGION
from world.kube.shedding import shedding
from world.kube.webhook import REMEDIATOR, FailingWebhook, failing_webhook
from world.scenarios.kit import RECONCILE, run_as_scheduled
from world.world import World

RECONCILE_SECONDS = 600.0
"""How long the reconcile after a storm may take: it checks every tainted Node's lock."""
OUTCOMES_TITLE = "Remediations by"
"""How the dashboard's widget of remediations by action and outcome is titled."""


@contextlib.contextmanager
def refusing(world: World, writes: int) -> Iterator[FailingWebhook | None]:
    """The remediator's load shed and its first ``writes`` writes to Nodes failed, until
    the block ends; nothing where ``writes`` is 0."""
    if not writes:
        yield None
        return
    probe = next(iter(world.machines.values())).node
    certs = world.cluster.workdir / "certs"
    with (
        shedding(world.api, REMEDIATOR),
        failing_webhook(world.api, certs, probe, writes, every_node=True) as webhook,
    ):
        yield webhook


def by_reason(world: World, metric: str) -> dict[str, int]:
    """A count (``KubeRefused``, ``AwsThrottled``) by ``Reason``, summed over the last hour,
    as CloudWatch holds it."""
    cloudwatch = world.aws("cloudwatch")
    listed = cloudwatch.list_metrics(Namespace=METRICS_NAMESPACE, MetricName=metric)
    now = datetime.now(UTC)
    found: Counter[str] = Counter()
    for each in listed["Metrics"]:
        reason = next(d["Value"] for d in each["Dimensions"] if d["Name"] == "Reason")
        stats = cloudwatch.get_metric_statistics(
            Namespace=METRICS_NAMESPACE,
            MetricName=metric,
            Dimensions=each["Dimensions"],
            StartTime=now - timedelta(hours=1),
            EndTime=now + timedelta(minutes=1),
            Period=3700,
            Statistics=["Sum"],
        )["Datapoints"]
        found[reason] += int(sum(p["Sum"] for p in stats))
    return dict(found)


def ended_as(record: dict[str, Any]) -> str | None:
    """How a decision record ended, as ``nodemedic history`` tells it and the dashboard
    counts it: its outcome, or ``failed`` where the failure phase recorded its state (it
    writes no outcome); None while it runs."""
    outcome = record.get("outcome") or ("failed" if record.get("state") == "failed" else None)
    return None if outcome is None else str(outcome)


def after_storm(world: World, began: float) -> dict[str, Any]:
    """What the reconcile finds, and the ledger's and the dashboard's outcomes."""
    reconciled = run_as_scheduled(world, RECONCILE, RECONCILE_SECONDS)
    ledger = Counter(
        ended
        for r in records(world.aws("dynamodb"), world.ledger_table, None)
        if (ended := ended_as(r))
    )
    # Reading every widget of the dashboard after a storm of 1,500 nodes takes moto a while.
    patient = Config(read_timeout=RECONCILE_SECONDS)
    cloudwatch = boto3.client("cloudwatch", REGION, endpoint_url=world.endpoint, config=patient)
    drawn = board(
        cloudwatch,
        dashboard_name(world.settings.name),
        start=datetime.fromtimestamp(began, UTC) - timedelta(minutes=5),
        period=60,
    )
    (outcomes,) = [w for w in drawn.widgets if w.title.startswith(OUTCOMES_TITLE)]
    dashboard: Counter[str] = Counter()
    for series in outcomes.series:
        dashboard[series.label.split()[-1]] += int(sum(value for _, value in series.points))
    return {
        "reconciled": reconciled is not None,
        "stranded": None if reconciled is None else reconciled.get("count"),
        "stranded_nodes": [] if reconciled is None else list(reconciled.get("nodes") or [])[:5],
        "ledger_outcomes": dict(ledger),
        "dashboard_outcomes": dict(dashboard),
    }
