"""Embedded Metric Format documents read as CloudWatch Logs reads them: the metrics of a
valid one, nothing from a plain log line, and a malformed one refused whole with the error
CloudWatch counts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from world.aws.emf import PARSING_ERRORS, VALIDATION_ERRORS, Datum, read

STAMP = 1_800_000_000_123


def document(**root: Any) -> dict[str, Any]:
    """What Powertools prints for two metrics under one dimension set, plus ``root``."""
    return {
        "_aws": {
            "Timestamp": STAMP,
            "CloudWatchMetrics": [
                {
                    "Namespace": "NodeMedic",
                    "Dimensions": [["Cluster", "NodeGroup"], ["Cluster"]],
                    "Metrics": [
                        {"Name": "LinesClassified", "Unit": "Count"},
                        {"Name": "Latency", "Unit": "Seconds", "StorageResolution": 1},
                        {"Name": "Plain"},
                    ],
                }
            ],
        },
        "Cluster": "demo",
        "NodeGroup": "p5",
        "LinesClassified": 3,
        "Latency": [0.5, 1.5],
        "Plain": 7,
        "function_request_id": "not a metric",
        **root,
    }


def test_each_metric_lands_once_per_dimension_set_with_its_unit_and_time() -> None:
    found = read(json.dumps(document()))
    assert found is not None and found.error is None
    at = datetime.fromtimestamp(STAMP / 1000, UTC)
    group = (("Cluster", "demo"), ("NodeGroup", "p5"))
    cluster = (("Cluster", "demo"),)
    assert found.data == (
        Datum("NodeMedic", "LinesClassified", group, (3.0,), "Count", at),
        Datum("NodeMedic", "LinesClassified", cluster, (3.0,), "Count", at),
        Datum("NodeMedic", "Latency", group, (0.5, 1.5), "Seconds", at, 1),
        Datum("NodeMedic", "Latency", cluster, (0.5, 1.5), "Seconds", at, 1),
        Datum("NodeMedic", "Plain", group, (7.0,), "None", at),
        Datum("NodeMedic", "Plain", cluster, (7.0,), "None", at),
    )


def test_an_empty_dimension_set_makes_a_metric_without_dimensions() -> None:
    raw = document()
    raw["_aws"]["CloudWatchMetrics"][0]["Dimensions"] = [[]]
    found = read(json.dumps(raw))
    assert found is not None
    assert {d.dimensions for d in found.data} == {()}


@pytest.mark.parametrize(
    "line",
    [
        "START RequestId: 1 Version: $LATEST",
        '{"level": "INFO", "message": "classified 3 lines"}',
        "[1.5] NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus.",
    ],
)
def test_a_line_that_is_no_emf_document_is_left_alone(line: str) -> None:
    assert read(line) is None


def test_a_line_naming_aws_that_is_no_json_is_a_parsing_error() -> None:
    found = read(json.dumps(document())[:-5])
    assert found is not None
    assert (found.error, found.data) == (PARSING_ERRORS, ())


def _drop_timestamp(raw: dict[str, Any]) -> None:
    del raw["_aws"]["Timestamp"]


def _directive(raw: dict[str, Any]) -> dict[str, Any]:
    directive: dict[str, Any] = raw["_aws"]["CloudWatchMetrics"][0]
    return directive


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_drop_timestamp, "Timestamp"),
        (lambda raw: raw.update(NodeGroup=5), "NodeGroup"),
        (lambda raw: raw.pop("LinesClassified"), "LinesClassified"),
        (lambda raw: raw.update(LinesClassified="3"), "LinesClassified"),
        (lambda raw: raw.update(Latency=list(range(101))), "Latency"),
        (lambda raw: raw.update(Latency=[]), "Latency"),
        (lambda raw: raw.update(Plain=True), "Plain"),
        (lambda raw: _directive(raw)["Metrics"][0].update(Unit="Lines"), "'Lines'"),
        (lambda raw: _directive(raw)["Metrics"][1].update(StorageResolution=5), "5"),
        (lambda raw: _directive(raw).update(Namespace=""), "Namespace"),
        (lambda raw: _directive(raw).update(Dimensions=[]), "Dimensions"),
        (lambda raw: _directive(raw).update(Dimensions=[["Cluster"] * 31]), "30"),
        (lambda raw: _directive(raw).update(Metrics=[{"Name": "Plain"}] * 101), "100"),
        (lambda raw: raw["_aws"].update(CloudWatchMetrics={}), "CloudWatchMetrics"),
    ],
)
def test_a_document_breaking_the_specification_yields_no_metric(change: Any, said: str) -> None:
    raw = document()
    change(raw)
    found = read(json.dumps(raw))
    assert found is not None
    assert (found.error, found.data) == (VALIDATION_ERRORS, ())
    assert said in found.reason
