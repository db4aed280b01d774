"""``nodemedic breaker status`` as an operator reads it: JSON for tools, lines for a person,
and the AWS profile the operator names."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from console.cli import main
from nodemedic.remediate import breaker
from nodemedic.remediate.ledger import HOLDERS
from tests.support.tables import create_ledger_table

TABLE = "ledger"


@pytest.fixture
def tripped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A ledger whose breaker of cluster ``gpu`` tripped a minute ago, one node in flight."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        create_ledger_table(TABLE)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        now = int(time.time())
        dynamodb.put_item(
            TableName=TABLE,
            Item={
                "pk": {"S": breaker.CLUSTER_PK.format("gpu")},
                "sk": {"S": breaker.CLUSTER_SK},
                breaker.TRIPPED_AT: {"N": str(now - 60)},
                breaker.COOLED_UNTIL: {"N": str(now + 3600)},
                breaker.TRIP_REASON: {"S": "3 replaces in 10 minutes"},
                HOLDERS: {"SS": ["i-0abc"]},
            },
        )
        yield


def _breaker(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["breaker", "status", "--cluster", "gpu", "--table", TABLE, *extra])
    return code, capsys.readouterr().out


def test_status_is_one_json_object_by_default(
    tripped: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _breaker(capsys)
    assert code == 0
    shown = json.loads(out)
    assert shown["state"] == "tripped"
    assert shown["in_flight"] == ["i-0abc"]


def test_the_table_format_says_why_it_tripped_and_what_it_holds(
    tripped: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _breaker(capsys, "--format", "table")
    assert code == 0
    assert out.splitlines()[0] == "breaker of cluster gpu: tripped"
    assert "3 replaces in 10 minutes" in out
    assert "in flight: i-0abc" in out


def test_a_profile_that_does_not_exist_is_a_clear_error(
    tripped: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["breaker", "status", "--cluster", "gpu", "--profile", "nobody-has-this"])
    assert code == 2
    assert "nobody-has-this" in capsys.readouterr().err
