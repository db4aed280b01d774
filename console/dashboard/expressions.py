"""The dashboard's metric math, parsed into what this reader can evaluate from plain
metric queries: SEARCH, Metrics Insights ``SELECT``, ``SUM`` and ``FILL``.

Everything is reduced to ListMetrics and GetMetricData ``MetricStat`` queries, which every
CloudWatch answers alike (the local world's moto too, which evaluates no SEARCH and answers
Metrics Insights wrongly). Anything else raises ``Unsupported`` with what it is, so that
the page says what it leaves out instead of drawing an empty chart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INSIGHTS_STATISTICS = {"SUM": "Sum", "MAX": "Maximum", "MIN": "Minimum", "COUNT": "SampleCount"}
"""Metrics Insights functions whose value over many metrics follows from each metric's
statistic (an average of averages would not)."""


class Unsupported(ValueError):
    """An expression this reader does not evaluate; the message says which part."""


@dataclass(frozen=True)
class Search:
    """Metrics of ``namespace`` with exactly the ``schema`` dimensions (``None``: any),
    matching ``equals`` and named one of ``names`` (empty: any name)."""

    namespace: str
    schema: tuple[str, ...] | None
    equals: tuple[tuple[str, str], ...]
    names: tuple[str, ...]
    statistic: str
    period: int
    group_by: tuple[str, ...] | None = None
    """Metrics Insights: one series per group, the metrics of a group added."""


@dataclass(frozen=True)
class Sum:
    arguments: tuple[Node, ...]


@dataclass(frozen=True)
class Fill:
    argument: Node
    value: float | None
    """``None``: REPEAT, the last value before the gap."""


Node = Search | Sum | Fill

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'[^']*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<word>\w+)|(?P<punct>[(),\[\]]))"
)
_TERM = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([\w.:-]+))')
_NAMES = re.compile(r'\(\s*(MetricName\s*=\s*"[^"]*"(?:\s+OR\s+MetricName\s*=\s*"[^"]*")*)\s*\)')
_INSIGHTS = re.compile(
    r'^SELECT\s+(?P<function>\w+)\("(?P<metric>[^"]+)"\)\s+FROM\s+'
    r'(?:SCHEMA\((?P<schema>[^)]*)\)|"(?P<namespace>[^"]+)")'
    r"(?:\s+WHERE\s+(?P<where>.*?))?(?:\s+GROUP\s+BY\s+(?P<group>.*))?$",
    re.IGNORECASE | re.DOTALL,
)


def _quoted(names: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"') for part in names.split(",") if part.strip())


def search_query(query: str, statistic: str, period: int) -> Search:
    """``{"ns","dim",…} Key="value" AND (MetricName="a" OR …)``: the schema and exact
    terms the stack writes (``stacks.insights.search_expressions``)."""
    found = re.fullmatch(r"\s*\{([^}]*)\}(.*)", query, re.DOTALL)
    if found is None:
        raise Unsupported(f"SEARCH without a {{namespace,dimensions}} schema: {query[:80]}")
    namespace, *schema = _quoted(found.group(1))
    rest = found.group(2)
    names: tuple[str, ...] = ()
    group = _NAMES.search(rest)
    if group is not None:
        names = tuple(value for _, value, _ in _TERM.findall(group.group(1)))
        rest = rest[: group.start()] + rest[group.end() :]
    equals = tuple((key, quoted or bare) for key, quoted, bare in _TERM.findall(rest))
    leftover = _TERM.sub("", rest).replace("AND", "").strip()
    if leftover:
        raise Unsupported(f"SEARCH terms other than Key=value AND …: {leftover[:80]}")
    if any(key == "MetricName" for key, _ in equals):
        names += tuple(value for key, value in equals if key == "MetricName")
        equals = tuple((k, v) for k, v in equals if k != "MetricName")
    return Search(namespace, tuple(schema), equals, names, statistic, period)


def insights_query(query: str, period: int) -> Search:
    """``SELECT F("metric") FROM "ns" | SCHEMA(…) [WHERE "k" = 'v' AND …] [GROUP BY …]``."""
    found = _INSIGHTS.match(query.strip())
    if found is None:
        raise Unsupported(f"Metrics Insights query of another shape: {query[:80]}")
    function = found.group("function").upper()
    if function not in INSIGHTS_STATISTICS:
        raise Unsupported(f"Metrics Insights {function}(): not a sum of per-metric statistics")
    if found.group("schema") is not None:
        namespace, *schema = _quoted(found.group("schema"))
        dimensions: tuple[str, ...] | None = tuple(schema)
    else:
        namespace, dimensions = found.group("namespace"), None
    where = found.group("where") or ""
    equals = tuple(re.findall(r"\"?(\w+)\"?\s*=\s*'([^']*)'", where))
    if re.sub(r"\"?\w+\"?\s*=\s*'[^']*'", "", where).replace("AND", "").strip():
        raise Unsupported(f"Metrics Insights WHERE other than equalities: {where[:80]}")
    group = _quoted(found.group("group") or "")
    return Search(
        namespace,
        dimensions,
        equals,
        (found.group("metric"),),
        INSIGHTS_STATISTICS[function],
        period,
        group_by=group,
    )


class _Parser:
    def __init__(self, text: str, period: int) -> None:
        self.tokens: list[tuple[str, str]] = []
        at = 0
        while at < len(text.rstrip()):
            found = _TOKEN.match(text, at)
            if found is None or found.end() == at:
                raise Unsupported(f"metric math this reader does not parse: {text[at:][:40]}")
            kind = found.lastgroup or ""
            self.tokens.append((kind, found.group(kind)))
            at = found.end()
        self.at = 0
        self.period = period

    def take(self, kind: str | None = None, value: str | None = None) -> str:
        if self.at >= len(self.tokens):
            raise Unsupported("metric math ends early")
        got_kind, got = self.tokens[self.at]
        if (kind and got_kind != kind) or (value and got != value):
            raise Unsupported(f"metric math: {value or kind} expected, found {got}")
        self.at += 1
        return got

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def node(self) -> Node:
        if self.peek() == "[":
            self.take("punct", "[")
            items = [self.node()]
            while self.peek() == ",":
                self.take("punct", ",")
                items.append(self.node())
            self.take("punct", "]")
            return Sum(tuple(items)) if len(items) > 1 else items[0]
        function = self.take("word").upper()
        self.take("punct", "(")
        node = self.call(function)
        self.take("punct", ")")
        return node

    def call(self, function: str) -> Node:
        if function == "SEARCH":
            query = self.take("string")[1:-1]
            self.take("punct", ",")
            statistic = self.take("string")[1:-1]
            self.take("punct", ",")
            period = int(float(self.take("number")))
            return search_query(query, statistic, period)
        if function == "SUM":
            return Sum((self.node(),))
        if function == "FILL":
            argument = self.node()
            self.take("punct", ",")
            kind, value = self.tokens[self.at] if self.at < len(self.tokens) else ("", "")
            self.at += 1
            if kind == "number":
                return Fill(argument, float(value))
            if value.upper() == "REPEAT":
                return Fill(argument, None)
            raise Unsupported(f"FILL with {value}: only a number or REPEAT")
        raise Unsupported(f"metric math function {function}()")


def parse(expression: str, period: int) -> Node:
    """The expression of one dashboard metric; ``period`` where it names none."""
    if expression.lstrip().upper().startswith("SELECT "):
        return insights_query(expression, period)
    parser = _Parser(expression, period)
    node = parser.node()
    if parser.at != len(parser.tokens):
        raise Unsupported(f"metric math after the expression: {parser.peek()}")
    return node


def metric_names(node: Node) -> tuple[str, ...]:
    """The metric names an expression looks for."""
    if isinstance(node, Search):
        return node.names
    if isinstance(node, Sum):
        return tuple(n for argument in node.arguments for n in metric_names(argument))
    return metric_names(node.argument)


def statistics(node: Node) -> set[str]:
    """The statistics an expression asks CloudWatch for."""
    if isinstance(node, Search):
        return {node.statistic}
    if isinstance(node, Sum):
        return {s for argument in node.arguments for s in statistics(argument)}
    return statistics(node.argument)
