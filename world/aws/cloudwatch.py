"""CloudWatch as the dashboard reads it on AWS: metrics extracted from Embedded Metric
Format log lines, and percentile statistics. moto stores EMF lines as plain log events and
answers a percentile with an error page; the targets replaced here are ``motopatch``'s.

- ``metrics_from_logs``: every event CloudWatch Logs accepts (``PutLogEvents``, and so a
  Lambda's output, which moto writes to its log group through it) is read as EMF
  (``world.aws.emf``); a document's datapoints go to the region's CloudWatch, a malformed
  one is counted in ``AWS/Logs`` per log group, and the event is stored either way.
- ``percentile_statistics``: ``pNN.NN`` in GetMetricData's ``Stat`` and in
  GetMetricStatistics' ``ExtendedStatistics`` (botocore's model: 1 to 10 of them, p0.0 to
  p100, never beside ``Statistics``), over the period's raw values. CloudWatch has no
  percentile over negative values, nor over a statistic set unless its ``SampleCount`` is 1
  or its ``Minimum`` equals its ``Maximum``: such a period has no datapoint here either.
- ``metrics_listed_once``: ListMetrics lists each metric (namespace, name and dimension set)
  once, as CloudWatch does. moto lists one a datapoint where a metric has two dimensions or
  more, and compares each datapoint with every metric listed before it: after a storm of
  1,500 nodes, one ListMetrics ran past botocore's 60 s read timeout.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import botocore.session

from world.aws import emf
from world.aws.motopatch import (
    FILTERED_METRICS,
    GET_METRIC_DATA,
    GET_METRIC_STATISTICS,
    PUT_LOG_EVENTS,
    STATISTIC,
    replaced,
)

_PERCENTILE = re.compile(r"p(\d{1,3}(?:\.\d{1,2})?)")
"""``p90``, ``p99.9``: CloudWatch takes up to two decimals."""
MAX_EXTENDED: int = (
    botocore.session.get_session()
    .get_service_model("cloudwatch")
    .operation_model("GetMetricStatistics")
    .input_shape.members["ExtendedStatistics"]
    .metadata["max"]
)
"""How many percentiles one GetMetricStatistics call may ask for (botocore's model: 10)."""
_log = logging.getLogger(__name__)


def percentile_share(statistic: str) -> float | None:
    """``p99.9`` → 99.9; None for any other statistic."""
    found = _PERCENTILE.fullmatch(statistic)
    share = float(found.group(1)) if found else None
    return share if share is not None and share <= 100 else None


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile: the smallest value with ``share`` percent of the values
    at or below it (p50 of 1, 2, 3, 4 is 2; p0 is the minimum). None where CloudWatch has
    none: no value, or a negative one."""
    if not values or min(values) < 0:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(share / 100 * len(ordered))) - 1]


def _raw_values(statistics: Any) -> list[float] | None:
    """The period's values (moto's ``Statistics``); None when a statistic set hides them."""
    values = list(statistics.metric_single_values_list)
    for aggregate in statistics.metric_aggregated_list:
        if aggregate.sample_count != 1 and aggregate.min != aggregate.max:
            return None
        values += [aggregate.min] * int(aggregate.sample_count)
    return values


def _drop_missing(result: dict[str, Any]) -> None:
    """A period without a percentile has no datapoint (moto would answer a null value)."""
    kept = [
        (t, v) for t, v in zip(result["timestamps"], result["values"], strict=True) if v is not None
    ]
    result["timestamps"] = [t for t, _ in kept]
    result["values"] = [v for _, v in kept]


def _datum(datum: emf.Datum) -> dict[str, Any]:
    """A ``MetricDatum`` as moto's ``put_metric_data`` takes it (naive UTC, as its own)."""
    return {
        "MetricName": datum.name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in datum.dimensions],
        "Values": list(datum.values),
        "Unit": datum.unit,
        "Timestamp": datum.timestamp.astimezone(UTC).replace(tzinfo=None),
        "StorageResolution": datum.storage_resolution,
    }


def _extract(cloudwatch: Any, log_group: str, events: Sequence[dict[str, Any]]) -> None:
    """Put the metrics of the EMF documents among ``events`` into ``cloudwatch`` (moto's
    backend of the log group's region), and count each malformed one as CloudWatch does."""
    for event in events:
        found = emf.read(str(event.get("message", "")))
        if found is None:
            continue
        data = found.data
        if found.error is not None:
            _log.warning("%s in %s: %s", found.error, log_group, found.reason)
            group = ((emf.ERRORS_DIMENSION, log_group),)
            at = datetime.now(UTC)
            data = (emf.Datum(emf.ERRORS_NAMESPACE, found.error, group, (1.0,), "Count", at),)
        for datum in data:
            cloudwatch.put_metric_data(datum.namespace, [_datum(datum)])


@contextlib.contextmanager
def metrics_from_logs() -> Iterator[None]:
    """While active, CloudWatch Logs extracts EMF metrics from the events it accepts."""
    from moto.cloudwatch.models import cloudwatch_backends

    original = PUT_LOG_EVENTS.current()

    def put_log_events(
        self: Any, log_group_name: str, log_stream_name: str, log_events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        token, rejected = original(self, log_group_name, log_stream_name, log_events)
        # moto keeps the events between the too old ones and the too new ones.
        first = rejected.get("tooOldLogEventEndIndex", -1) + 1
        last = rejected.get("tooNewLogEventStartIndex", len(log_events))
        backend = cloudwatch_backends[self.account_id][self.region_name]
        _extract(backend, log_group_name, log_events[first:last])
        return token, rejected

    with replaced({PUT_LOG_EVENTS: put_log_events}):
        yield


@contextlib.contextmanager
def percentile_statistics() -> Iterator[None]:
    """While active, moto's CloudWatch computes percentiles (the module's docstring)."""
    from moto.cloudwatch.exceptions import InvalidParameterCombination, InvalidParameterValue

    statistic, metric_data = STATISTIC.current(), GET_METRIC_DATA.current()
    metric_statistics = GET_METRIC_STATISTICS.current()

    def get_statistics_for_type(self: Any, stat: str) -> Any:
        share = percentile_share(stat)
        if share is None:
            return statistic(self, stat)
        values = _raw_values(self)
        return None if values is None else percentile(values, share)

    def get_metric_data(
        self: Any,
        queries: list[dict[str, Any]],
        start_time: datetime,
        end_time: datetime,
        scan_by: str = "TimestampAscending",
    ) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = metric_data(self, queries, start_time, end_time, scan_by)
        asked = {
            q["Id"]
            for q in queries
            if percentile_share(str(q.get("MetricStat", {}).get("Stat", ""))) is not None
        }
        for result in results:
            if result["id"] in asked:
                _drop_missing(result)
        return results

    def get_metric_statistics(self: Any) -> Any:
        extended = list(self._get_param("ExtendedStatistics") or [])
        if not extended:
            return metric_statistics(self)
        if self._get_param("Statistics"):
            raise InvalidParameterCombination(
                "Must specify either Statistics or ExtendedStatistics, but not both"
            )
        unknown = [s for s in extended if percentile_share(s) is None]
        if unknown or len(extended) > MAX_EXTENDED:
            raise InvalidParameterValue(
                f"ExtendedStatistics {unknown or extended}: 1 to {MAX_EXTENDED} of p0.0 to p100"
            )
        answer = metric_statistics(self)
        for datapoint in answer.result["Datapoints"]:
            found = {s: datapoint.get_statistics_for_type(s) for s in extended}
            datapoint.extended_statistics = {s: v for s, v in found.items() if v is not None}
        return answer

    with replaced(
        {
            STATISTIC: get_statistics_for_type,
            GET_METRIC_DATA: get_metric_data,
            GET_METRIC_STATISTICS: get_metric_statistics,
        }
    ):
        yield


@contextlib.contextmanager
def metrics_listed_once() -> Iterator[None]:
    """While active, ListMetrics lists each metric once (the module's docstring). A filter's
    dimension without a value matches any value, as moto's and CloudWatch's do."""
    from moto.cloudwatch.models import Dimension

    def get_filtered_metrics(
        self: Any, metric_name: str, namespace: str, dimensions: list[dict[str, str]]
    ) -> list[Any]:
        wanted = [Dimension(d["Name"], d.get("Value")) for d in dimensions or []]
        listed: dict[tuple[str, str, frozenset[tuple[str, str]]], Any] = {}
        for datum in self.get_all_metrics():
            if (namespace and datum.namespace != namespace) or (
                metric_name and datum.name != metric_name
            ):
                continue
            if any(want not in datum.dimensions for want in wanted):
                continue
            key = (
                datum.namespace,
                datum.name,
                frozenset((d.name, d.value) for d in datum.dimensions),
            )
            listed.setdefault(key, datum)
        return list(listed.values())

    with replaced({FILTERED_METRICS: get_filtered_metrics}):
        yield
