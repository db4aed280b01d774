"""Query text for Metrics Insights and SEARCH, built from catalog names."""

from __future__ import annotations

import re

import pytest

from stacks.insights import (
    MAX_SEARCH_LENGTH,
    insights_query,
    is_insights_query,
    search_expressions,
)


def test_identifiers_are_quoted_because_cluster_is_a_reserved_word() -> None:
    assert insights_query("MAX", "NvidiaXid_79", "NodeMedic", cluster="demo") == (
        'SELECT MAX("NvidiaXid_79") FROM SCHEMA("NodeMedic", "Cluster", "NodeGroup") '
        "WHERE \"Cluster\" = 'demo'"
    )


def test_a_query_may_group_and_ignore_the_schema() -> None:
    grouped = insights_query(
        "SUM",
        "Remediations",
        "NodeMedic",
        cluster="c1",
        dimensions=("Cluster", "Action", "Outcome"),
        group_by=("Action", "Outcome"),
    )
    assert grouped.endswith('WHERE "Cluster" = \'c1\' GROUP BY "Action", "Outcome"')
    assert 'SCHEMA("NodeMedic", "Cluster", "Action", "Outcome")' in grouped
    anywhere = insights_query("SUM", "FaultsFound", "NodeMedic", cluster="c1", dimensions=None)
    assert 'FROM "NodeMedic" WHERE' in anywhere


def test_metric_math_is_not_a_metrics_insights_query() -> None:
    assert is_insights_query(insights_query("MAX", "X", "NodeMedic", cluster="c1"))
    assert not is_insights_query("failed + timedOut + aborted")
    assert not is_insights_query("SUM(SEARCH('{NodeMedic} SELECT', 'Sum', 300))")


def test_a_quote_in_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="quotes"):
        insights_query("MAX", 'bad"name', "NodeMedic", cluster="demo")


def test_search_splits_long_metric_lists_and_keeps_every_metric() -> None:
    metrics = [f"NvidiaXid_{code}" for code in range(200)]
    searches = search_expressions(
        "NodeMedic", metrics, cluster="demo", statistic="Sum", period_seconds=300
    )
    assert len(searches) > 1
    found = []
    for search in searches:
        (query,) = re.findall(r"^SEARCH\('(.*)', 'Sum', 300\)$", search)
        assert len(query) <= MAX_SEARCH_LENGTH
        assert query.startswith('{"NodeMedic","Cluster","NodeGroup"} Cluster="demo" AND (')
        found += re.findall(r'MetricName="([^"]+)"', query)
    assert found == metrics


def test_no_metric_no_search() -> None:
    assert (
        search_expressions("NodeMedic", [], cluster="d", statistic="Sum", period_seconds=60) == []
    )
