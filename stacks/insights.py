"""Query text for CloudWatch: Metrics Insights (alarms, graphs) and SEARCH (graphs).

Every identifier is double-quoted: ``Cluster`` is a Metrics Insights reserved word, and a
quoted name is valid whatever characters the catalog's metric names use.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodemedic.contracts.metrics import CLUSTER_DIMENSION, NODE_GROUP_DIMENSION

DIMENSIONS = (CLUSTER_DIMENSION, NODE_GROUP_DIMENSION)
"""The dimensions the state machine publishes every pipeline and fault metric with."""
MAX_SEARCH_LENGTH = 1024
"""CloudWatch's limit on the query inside one SEARCH()."""


def identifier(name: str) -> str:
    if '"' in name or "'" in name:
        raise ValueError(f"{name!r}: quotes cannot appear in a metric, namespace or dimension")
    return f'"{name}"'


def insights_query(
    function: str,
    metric: str,
    namespace: str,
    *,
    cluster: str,
    dimensions: Sequence[str] | None = DIMENSIONS,
    group_by: tuple[str, ...] = (),
) -> str:
    """``SELECT function(metric) FROM SCHEMA(namespace, dims) WHERE Cluster = 'cluster'``.

    ``dimensions=None`` queries the namespace whatever the metric's dimensions.
    """
    source = (
        identifier(namespace)
        if dimensions is None
        else f"SCHEMA({', '.join(identifier(n) for n in (namespace, *dimensions))})"
    )
    if "'" in cluster:
        raise ValueError(f"{cluster!r}: a quote cannot appear in a cluster name")
    # Metrics Insights text, not SQL against a database; every name is quoted or checked.
    query = (
        f"SELECT {function}({identifier(metric)}) FROM {source} "  # noqa: S608
        f"WHERE {identifier('Cluster')} = '{cluster}'"
    )
    if group_by:
        query += f" GROUP BY {', '.join(identifier(name) for name in group_by)}"
    return query


def is_insights_query(expression: str) -> bool:
    """A Metrics Insights query, as opposed to metric math: alarms on these count against
    their own quota."""
    return expression.lstrip().upper().startswith("SELECT ")


def search_expressions(
    namespace: str,
    metrics: Sequence[str],
    *,
    cluster: str,
    statistic: str,
    period_seconds: int,
    dimensions: Sequence[str] = DIMENSIONS,
) -> list[str]:
    """SEARCH() calls that together find ``metrics`` of one cluster, each query within
    CloudWatch's length limit."""
    schema = "{" + ",".join(identifier(n) for n in (namespace, *dimensions)) + "}"
    head = f"{schema} Cluster={identifier(cluster)} AND "

    def search(names: Sequence[str]) -> str:
        terms = " OR ".join(f"MetricName={identifier(m)}" for m in names)
        return f"{head}({terms})"

    if not metrics:
        return []
    chunks: list[list[str]] = [[]]
    for metric in metrics:
        if chunks[-1] and len(search([*chunks[-1], metric])) > MAX_SEARCH_LENGTH:
            chunks.append([])
        chunks[-1].append(metric)
        if len(search(chunks[-1])) > MAX_SEARCH_LENGTH:
            raise ValueError(f"metric name {metric!r} alone overflows a SEARCH query")
    return [f"SEARCH('{search(chunk)}', '{statistic}', {period_seconds})" for chunk in chunks]
