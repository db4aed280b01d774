"""The cost benchmark's arithmetic: each price applied in the unit its source states."""

from __future__ import annotations

import pytest

from bench.pricing import GB, Fixed, Usage, bill, load_prices, monthly_dollars

NOTHING_FIXED = Fixed(
    custom_metrics=0,
    standard_alarm_metrics=0,
    insights_metrics_analysed=0,
    retention_days=0,
    compression=1.0,
)
MONTH = 730 / 24


def month_of(usage: Usage, fixed: Fixed = NOTHING_FIXED) -> dict[str, float]:
    """Dollars for one node whose usage over a whole month is ``usage``."""
    return monthly_dollars(usage.times(1 / MONTH), fixed, load_prices(), nodes=1)


@pytest.mark.parametrize(
    ("usage", "service", "dollars"),
    [
        (Usage(lambda_requests=1_000_000), "Lambda", 0.20),
        (Usage(lambda_gb_seconds=1_000_000), "Lambda", 16.6667),
        (Usage(transitions=1_000), "Step Functions", 0.025),
        (Usage(write_units=1_000_000), "DynamoDB", 0.625),
        (Usage(read_units=1_000_000), "DynamoDB", 0.125),
        (Usage(log_bytes=GB), "CloudWatch Logs", 0.50),
        (Usage(sns_publishes=1_000_000), "SNS", 0.50),
        (Usage(metric_requests=1_000), "CloudWatch metrics", 0.01),
        (Usage(traces=1_000_000), "X-Ray", 5.00),
    ],
)
def test_a_unit_of_usage_costs_its_list_price(usage: Usage, service: str, dollars: float) -> None:
    costs = month_of(usage)
    assert costs[service] == pytest.approx(dollars, rel=1e-4)
    assert sum(costs.values()) == pytest.approx(dollars, rel=1e-4)


def test_stored_logs_are_priced_per_gb_month_of_their_compressed_size() -> None:
    """A GB a day kept 30 days at 15 % of its size: 4.5 GB stored all month."""
    fixed = Fixed(0, 0, 0, retention_days=30, compression=0.15)
    day = monthly_dollars(Usage(log_bytes=GB), fixed, load_prices(), nodes=1)
    assert day["CloudWatch Logs"] == pytest.approx(0.50 * MONTH + 0.03 * 4.5)


def test_alarms_and_metrics_are_a_month_each_whatever_the_fleet() -> None:
    fixed = Fixed(10, 3, 7, retention_days=0, compression=1.0)
    for nodes in (1, 1000):
        costs = monthly_dollars(Usage(), fixed, load_prices(), nodes=nodes)
        assert costs["CloudWatch metrics"] == pytest.approx(3.00)
        assert costs["CloudWatch alarms"] == pytest.approx(1.00)


def test_a_node_day_scales_to_a_thousand_node_month() -> None:
    costs = monthly_dollars(Usage(transitions=1), NOTHING_FIXED, load_prices(), nodes=1000)
    assert costs["Step Functions"] == pytest.approx(1000 * MONTH * 0.025 / 1000)


def test_xray_records_one_trace_a_second_and_a_twentieth_of_the_rest() -> None:
    """100 M traced requests a month (38 a second): 2.63 M in the reservoir, 5 % of the others."""
    seconds = MONTH * 86400
    recorded = seconds + 0.05 * (100_000_000 - seconds)
    costs = month_of(Usage(traces=100_000_000))
    assert costs["X-Ray"] == pytest.approx(5.00 * recorded / 1_000_000, rel=1e-6)


def test_a_clusters_bill_is_its_fixed_part_plus_a_part_per_node() -> None:
    """Alarms and custom metrics are the cluster's whatever its size; the rest grows with its
    nodes, so a 64-node cluster's month is read off the split."""
    fixed = Fixed(10, 3, 7, retention_days=30, compression=0.2)
    node_day = Usage(log_bytes=GB / 1000, lambda_requests=300, write_units=288, transitions=1)
    split = bill(node_day, fixed, load_prices())
    assert split.fixed == pytest.approx(3.00 + 1.00)
    for nodes in (1, 64, 1000):
        whole = sum(monthly_dollars(node_day, fixed, load_prices(), nodes=nodes).values())
        assert split.of(nodes) == pytest.approx(whole)
    assert split.of(64) - split.of(0) == pytest.approx(64 * split.per_node)
