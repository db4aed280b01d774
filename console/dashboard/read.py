"""A CloudWatch dashboard's body and the data of its widgets, read from an account (or
the local world's moto) into plain values the page draws.

Metrics become ``MetricStat`` queries; expressions are evaluated here from them
(``console.dashboard.expressions``). What cannot be evaluated is kept as a note on its
widget, never dropped: a chart that is blank because of the reader must say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from console.dashboard.expressions import (
    Fill,
    Node,
    Search,
    Sum,
    Unsupported,
    metric_names,
    parse,
    statistics,
)
from console.dashboard.links import log_sources, logs_insights_url
from console.dashboard.notes import PROP, answer, entry_name, silence

DEFAULT_PERIOD = 300
DEFAULT_STATISTIC = "Average"
_DURATION = re.compile(r"-?P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_MAX_QUERIES = 500
"""GetMetricData's limit on queries in one call."""


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]
    """(epoch seconds, value), oldest first."""


@dataclass(frozen=True)
class Annotation:
    value: float
    label: str
    colour: str


@dataclass(frozen=True)
class Widget:
    """One widget of the body, positioned on CloudWatch's 24-column grid."""

    kind: str
    """``chart`` | ``value`` | ``alarms`` | ``text`` | ``log`` (the last not drawn)."""
    title: str
    x: int
    y: int
    width: int
    height: int
    series: tuple[Series, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    stacked: bool = False
    y_label: str = ""
    y_min: float | None = None
    alarms: tuple[tuple[str, str], ...] = ()
    """(alarm name, state)."""
    text: str = ""
    notes: tuple[str, ...] = ()
    """What of the widget is not drawn, and why."""
    link: str = ""
    """Where the console shows what the page does not (a log widget's query)."""
    image: bytes = b""
    """The widget as CloudWatch draws it (PNG), drawn instead of the page's own chart."""


@dataclass(frozen=True)
class Board:
    name: str
    start: float
    end: float
    widgets: tuple[Widget, ...]


@dataclass
class _Metric:
    namespace: str
    name: str
    dimensions: dict[str, str]
    statistic: str
    period: int
    points: list[tuple[float, float]] = field(default_factory=list)


def since(body: Mapping[str, Any], now: datetime) -> datetime:
    """The body's ``start``: an ISO 8601 duration before now (``-P1D``) or a time."""
    start = str(body.get("start", "-PT3H"))
    found = _DURATION.match(start)
    if found is None:
        return datetime.fromisoformat(start.replace("Z", "+00:00"))
    weeks, days, hours, minutes, seconds = (int(g or 0) for g in found.groups())
    span = timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    return now - span


class Reader:
    """Evaluates a widget's metrics between ``start`` and ``end`` through one client."""

    def __init__(
        self, cloudwatch: Any, start: datetime, end: datetime, period: int | None = None
    ) -> None:
        self.cloudwatch = cloudwatch
        self.start, self.end = start, end
        self.period = period
        """Every query's period instead of the widget's (the demo's minutes want seconds)."""

    def _period(self, period: int) -> int:
        return self.period or period

    def fetch(self, metrics: Sequence[_Metric]) -> None:
        """Fill in every metric's points, at most ``_MAX_QUERIES`` to a call."""
        for first in range(0, len(metrics), _MAX_QUERIES):
            chunk = metrics[first : first + _MAX_QUERIES]
            queries = [
                {
                    "Id": f"m{index}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": m.namespace,
                            "MetricName": m.name,
                            # In the order ListMetrics gave them, the publisher's: moto
                            # matches the list in order (CloudWatch as a set), and a sorted
                            # Action, Cluster, NodeGroup, Outcome found no datapoint there.
                            "Dimensions": [
                                {"Name": k, "Value": v} for k, v in m.dimensions.items()
                            ],
                        },
                        "Period": self._period(m.period),
                        "Stat": m.statistic,
                    },
                }
                for index, m in enumerate(chunk)
            ]
            for page in self.cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries,
                StartTime=self.start,
                EndTime=_whole_second_after(self.end),
                ScanBy="TimestampAscending",
            ):
                for result in page["MetricDataResults"]:
                    metric = chunk[int(result["Id"][1:])]
                    metric.points.extend(
                        (stamp.timestamp(), float(value))
                        for stamp, value in zip(result["Timestamps"], result["Values"], strict=True)
                        if value is not None
                    )
        for metric in metrics:
            metric.points.sort()

    def _listed(self, search: Search) -> Iterator[_Metric]:
        pages = self.cloudwatch.get_paginator("list_metrics").paginate(
            Namespace=search.namespace,
            Dimensions=[{"Name": k, "Value": v} for k, v in search.equals],
            **({"MetricName": search.names[0]} if len(search.names) == 1 else {}),
        )
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for page in pages:
            for found in page["Metrics"]:
                dimensions = {d["Name"]: d["Value"] for d in found.get("Dimensions", [])}
                if search.names and found["MetricName"] not in search.names:
                    continue
                if search.schema is not None and set(dimensions) != set(search.schema):
                    continue
                identity = (found["MetricName"], tuple(sorted(dimensions.items())))
                if identity in seen:  # moto lists a metric once per datapoint
                    continue
                seen.add(identity)
                yield _Metric(
                    search.namespace,
                    found["MetricName"],
                    dimensions,
                    search.statistic,
                    search.period,
                )

    def evaluate(self, node: Node) -> list[tuple[dict[str, str], dict[float, float]]]:
        """Series as (dimensions that name it, epoch → value)."""
        if isinstance(node, Search):
            metrics = list(self._listed(node))
            self.fetch(metrics)
            if node.group_by is None:
                return [({"MetricName": m.name, **m.dimensions}, dict(m.points)) for m in metrics]
            groups: dict[tuple[str, ...], dict[float, float]] = {}
            for m in metrics:
                key = tuple(m.dimensions.get(name, "Other") for name in node.group_by)
                added = groups.setdefault(key, {})
                for at, value in m.points:
                    added[at] = added.get(at, 0.0) + value
            return [
                (
                    dict(zip(node.group_by, key, strict=True)) or {"MetricName": node.names[0]},
                    values,
                )
                for key, values in groups.items()
            ]
        if isinstance(node, Sum):
            total: dict[float, float] = {}
            inputs = [s for argument in node.arguments for s in self.evaluate(argument)]
            for _, values in inputs:
                for at, value in values.items():
                    total[at] = total.get(at, 0.0) + value
            return [({}, total)] if inputs else []
        return [(names, self._fill(values, node)) for names, values in self.evaluate(node.argument)]

    def _fill(self, values: dict[float, float], fill: Fill) -> dict[float, float]:
        """Every period of the range has a value: the last one seen (REPEAT, from the first
        datapoint on) or the constant."""
        period = self._period(_period_of(fill.argument))
        at, end = self.start.timestamp(), self.end.timestamp()
        if values and fill.value is None:
            at = min(values)
        filled, last = {}, fill.value
        while at < end:
            last = values.get(at, last)
            if last is not None:
                filled[at] = last
            at += period
        return filled


def _whole_second_after(end: datetime) -> datetime:
    """``end`` rounded up to the second: moto cuts EndTime's fraction off and then leaves
    out a datapoint of that very second (the demo's last outcome, drawn at once)."""
    if not end.microsecond:
        return end
    return end.replace(microsecond=0) + timedelta(seconds=1)


def _period_of(node: Node) -> int:
    if isinstance(node, Search):
        return node.period
    if isinstance(node, Sum):
        return _period_of(node.arguments[0])
    return _period_of(node.argument)


def _label(template: str, names: Mapping[str, str], fallback: str) -> str:
    if not template:
        return fallback
    return PROP.sub(lambda m: names.get(m.group(1), ""), template).strip() or fallback


def metric_series(
    reader: Reader, entry: Sequence[Any], widget: Mapping[str, Any]
) -> tuple[list[Series], list[str], str]:
    """One entry of a metric widget's ``metrics``: its series, a note if not drawn, and
    why it is empty should the whole widget be (a widget with data needs no excuse for a
    quiet line)."""
    options: dict[str, Any] = dict(entry[-1]) if entry and isinstance(entry[-1], dict) else {}
    period = int(options.get("period", widget.get("period", DEFAULT_PERIOD)))
    if "expression" in options:
        expression = str(options["expression"])
        try:
            node = parse(expression, period)
        except Unsupported as exc:
            return [], [f"{entry_name(entry)}: not drawn, {exc}"], ""
        label = str(options.get("label", ""))
        try:
            series = [
                Series(
                    _label(label, names, " ".join(names.values()) or expression[:40]),
                    tuple(sorted(values.items())),
                )
                for names, values in reader.evaluate(node)
            ]
        except ClientError as exc:
            return [], [f"{entry_name(entry)}: not drawn, {answer(exc, statistics(node))}"], ""
        names = metric_names(node)
        name = entry_name(entry) if PROP.sub("", label).strip() else ", ".join(names)
        return series, [], silence(name, names, found=bool(series))
    plain = [part for part in entry if not isinstance(part, dict)]
    if len(plain) < 2 or "..." in plain or "." in plain:
        return [], [f"{plain}: not drawn, a metric written in shorthand"], ""
    namespace, name, *pairs = (str(p) for p in plain)
    metric = _Metric(
        namespace,
        name,
        dict(zip(pairs[::2], pairs[1::2], strict=True)),
        str(options.get("stat", widget.get("stat", DEFAULT_STATISTIC))),
        period,
    )
    try:
        reader.fetch([metric])
    except ClientError as exc:
        return [], [f"{entry_name(entry)}: not drawn, {answer(exc, {metric.statistic})}"], ""
    series = [Series(str(options.get("label", name)), tuple(metric.points))]
    return series, [], silence(str(options.get("label", name)), [name], found=None)


def _alarm_states(cloudwatch: Any, arns: Sequence[str]) -> tuple[tuple[str, str], ...]:
    names = [arn.split(":alarm:", 1)[-1] for arn in arns]
    states: dict[str, str] = {}
    for first in range(0, len(names), 100):  # DescribeAlarms' limit on names
        found = cloudwatch.describe_alarms(
            AlarmNames=names[first : first + 100],
            AlarmTypes=["MetricAlarm", "CompositeAlarm"],
        )
        for alarm in [*found.get("MetricAlarms", []), *found.get("CompositeAlarms", [])]:
            states[alarm["AlarmName"]] = alarm["StateValue"]
    return tuple((name, states.get(name, "NOT FOUND")) for name in names)


def widget(reader: Reader, raw: Mapping[str, Any]) -> Widget:
    """One widget of the body with its data."""
    props: Mapping[str, Any] = raw.get("properties", {})
    place = Widget(
        "",
        str(props.get("title", "")),
        x=int(raw.get("x", 0)),
        y=int(raw.get("y", 0)),
        width=int(raw.get("width", 6)),
        height=int(raw.get("height", 6)),
    )
    kind = raw.get("type")
    if kind == "text":
        return replace(place, kind="text", text=str(props.get("markdown", "")))
    if kind == "alarm":
        alarms = _alarm_states(reader.cloudwatch, [str(a) for a in props.get("alarms", [])])
        return replace(place, kind="alarms", alarms=alarms)
    if kind == "log":
        groups, query = log_sources(str(props.get("query", "")))
        region = str(props.get("region") or reader.cloudwatch.meta.region_name)
        return replace(
            place,
            kind="log",
            text=f"Logs Insights on {', '.join(groups) or 'the log groups'}, in {region}",
            link=logs_insights_url(region, query, groups),
            notes=("log lines are not drawn here: the link runs the query in the console",),
        )
    if kind != "metric":
        return replace(
            place,
            kind=str(kind),
            notes=(f"a {kind} widget is not drawn here: open the dashboard in the console",),
        )
    series: list[Series] = []
    notes: list[str] = []
    quiet: list[str] = []
    for entry in props.get("metrics", []):
        drawn, missed, empty = metric_series(reader, entry, props)
        series += drawn
        notes += missed
        quiet += [empty] if empty else []
    if not any(s.points for s in series):
        notes += quiet
    left = props.get("yAxis", {}).get("left", {})
    return replace(
        place,
        kind="value" if props.get("view") == "singleValue" else "chart",
        series=tuple(series),
        annotations=tuple(
            Annotation(float(a["value"]), str(a.get("label", "")), str(a.get("color", "#d62728")))
            for a in props.get("annotations", {}).get("horizontal", [])
            if "value" in a
        ),
        stacked=bool(props.get("stacked", False)),
        y_label=str(left.get("label", "")),
        y_min=float(left["min"]) if "min" in left else None,
        notes=tuple(notes),
    )


def board(
    cloudwatch: Any,
    name: str,
    *,
    now: datetime | None = None,
    start: datetime | None = None,
    period: int | None = None,
) -> Board:
    """The dashboard ``name`` with its widgets' data, from ``start`` (default: the body's
    own time range) to ``now``."""
    end = now or datetime.now(UTC)
    body = json.loads(cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"])
    begin = start or since(body, end)
    reader = Reader(cloudwatch, begin, end, period)
    widgets = sorted(body.get("widgets", []), key=lambda w: (w.get("y", 0), w.get("x", 0)))
    return Board(
        name, begin.timestamp(), end.timestamp(), tuple(widget(reader, w) for w in widgets)
    )
