"""What usage costs: the units nodemedic consumes, priced with the list prices in
``bench/prices.json`` (dated, with their sources), as dollars a month by service.

Kept apart from ``bench/cost.py``, which measures the usage in the local world, so the
arithmetic can be checked without a world: a price stated per million and applied per
thousand is a thousandfold error that no run would show.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRICES = Path(__file__).with_name("prices.json")
DAYS_PER_MONTH = 730 / 24
"""AWS bills a month as 730 hours."""
GB = 2**30
"""AWS's billing GB (CloudWatch Logs, Lambda's GB-seconds) is 1,024³ bytes."""
TRACE_RESERVOIR = 1.0
TRACE_RATE = 0.05
"""X-Ray's default sampling rule, which active tracing applies: the first request each
second and 5 % of the others are recorded
(https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html)."""


@dataclass(frozen=True)
class Usage:
    """What one node causes in a day, or one remediation causes, in billing units."""

    log_bytes: float = 0.0
    """CloudWatch Logs ingestion: UTF-8 message bytes + 26 per event."""
    lambda_requests: float = 0.0
    lambda_gb_seconds: float = 0.0
    transitions: float = 0.0
    write_units: float = 0.0
    read_units: float = 0.0
    metric_requests: float = 0.0
    sns_publishes: float = 0.0
    traces: float = 0.0
    """Requests that start a trace (invocations, executions), before X-Ray's sampling."""

    def plus(self, other: Usage, times: float = 1.0) -> Usage:
        """This usage and ``times`` times ``other``."""
        return Usage(
            **{
                f.name: getattr(self, f.name) + times * getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )

    def times(self, factor: float) -> Usage:
        return Usage().plus(self, factor)


@dataclass(frozen=True)
class Fixed:
    """What a cluster pays for a month whatever its traffic: what the template deploys and
    the metrics its functions and state machine publish."""

    custom_metrics: int
    standard_alarm_metrics: int
    insights_metrics_analysed: int
    retention_days: int
    """Log retention: how many days of ingested logs are stored at any time."""
    compression: float
    """Stored bytes per ingested byte (CloudWatch Logs bills storage compressed)."""


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    """The dated price file; each entry is ``dollars`` per ``per`` ``unit``."""
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def price(prices: dict[str, Any], key: str, quantity: float) -> float:
    """Dollars for ``quantity`` units of ``key``, in the unit the price file states."""
    entry = prices["prices"][key]
    return quantity * float(entry["dollars"]) / float(entry["per"])


def recorded_traces(requests: float, seconds: float) -> float:
    """Traces X-Ray records of ``requests`` spread evenly over ``seconds``: sampling makes
    the price of tracing grow with the fleet's request rate far slower than linearly."""
    reservoir = min(requests, TRACE_RESERVOIR * seconds)
    return reservoir + TRACE_RATE * (requests - reservoir)


def cluster_dollars(fixed: Fixed, prices: dict[str, Any]) -> dict[str, float]:
    """What one cluster pays a month whatever its size: the alarms its template deploys and
    the custom metrics its functions publish."""
    return {
        "CloudWatch metrics": price(prices, "custom_metrics", fixed.custom_metrics),
        "CloudWatch alarms": price(prices, "alarms_standard", fixed.standard_alarm_metrics)
        + price(prices, "alarms_insights", fixed.insights_metrics_analysed),
    }


def fleet_dollars(
    per_node_day: Usage, fixed: Fixed, prices: dict[str, Any], nodes: int
) -> dict[str, float]:
    """What ``nodes`` nodes that each cause ``per_node_day`` add to it a month, by service."""
    month = per_node_day.times(nodes * DAYS_PER_MONTH)
    stored_gb = per_node_day.log_bytes * nodes * fixed.retention_days * fixed.compression / GB
    return {
        "CloudWatch Logs": price(prices, "logs_ingestion", month.log_bytes / GB)
        + price(prices, "logs_storage", stored_gb),
        "Lambda": price(prices, "lambda_requests", month.lambda_requests)
        + price(prices, "lambda_compute", month.lambda_gb_seconds),
        "Step Functions": price(prices, "sfn_transitions", month.transitions),
        "DynamoDB": price(prices, "dynamodb_writes", month.write_units)
        + price(prices, "dynamodb_reads", month.read_units),
        "CloudWatch metrics": price(prices, "metric_api", month.metric_requests),
        "SNS": price(prices, "sns_publishes", month.sns_publishes),
        "X-Ray": price(
            prices, "xray_traces", recorded_traces(month.traces, DAYS_PER_MONTH * 86400)
        ),
    }


def monthly_dollars(
    per_node_day: Usage, fixed: Fixed, prices: dict[str, Any], nodes: int = 1000
) -> dict[str, float]:
    """Dollars a month by service for a cluster of ``nodes`` nodes that each cause
    ``per_node_day``: its fixed part and its nodes' part together."""
    fleet = fleet_dollars(per_node_day, fixed, prices, nodes)
    for service, dollars in cluster_dollars(fixed, prices).items():
        fleet[service] = fleet.get(service, 0.0) + dollars
    return fleet


@dataclass(frozen=True)
class Bill:
    """A cluster's month split so that any size can be read off: ``fixed`` plus
    ``per_node`` times its nodes (X-Ray's sampling aside, the nodes' part is linear)."""

    fixed: float
    per_node: float

    def of(self, nodes: int) -> float:
        return self.fixed + self.per_node * nodes


def bill(per_node_day: Usage, fixed: Fixed, prices: dict[str, Any], nodes: int = 1000) -> Bill:
    """The split, the per-node part averaged over a fleet of ``nodes``."""
    return Bill(
        fixed=sum(cluster_dollars(fixed, prices).values()),
        per_node=sum(fleet_dollars(per_node_day, fixed, prices, nodes).values()) / nodes,
    )
