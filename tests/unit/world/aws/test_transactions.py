"""A cancelled DynamoDB transaction in the local world leaves every item as it was, and no
transaction copies its table: the ledger of a 1,500-node world is large, and each copy was
made while every other DynamoDB request waited."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from tests.support.tables import create_ledger_table
from world.aws.transactions import item_rollbacks

TABLE = "ledger"


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def copied(self: Table, memo: Any) -> Table:
        raise AssertionError("the table was copied")

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), item_rollbacks():
        client = boto3.client("dynamodb")
        create_ledger_table(TABLE)
        for n in range(300):
            client.put_item(TableName=TABLE, Item=key(f"node#{n}") | {"boots": {"N": "1"}})
        monkeypatch.setattr(Table, "__deepcopy__", copied, raising=False)
        yield client


def key(pk: str, sk: str = "lock") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def items(client: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return sorted(found, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


def test_a_cancelled_transaction_undoes_its_writes_and_touches_nothing_else(
    dynamodb: Any,
) -> None:
    before = items(dynamodb)
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": key("node#new") | {"boots": {"N": "1"}}}},
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": key("node#1"),
                        "UpdateExpression": "SET boots = :two",
                        "ExpressionAttributeValues": {":two": {"N": "2"}},
                    }
                },
                {"Delete": {"TableName": TABLE, "Key": key("node#2")}},
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": key("node#3"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )

    assert items(dynamodb) == before


def test_a_transaction_whose_conditions_hold_writes_every_item(dynamodb: Any) -> None:
    dynamodb.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": TABLE,
                    "Item": key("node#new") | {"boots": {"N": "1"}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Delete": {"TableName": TABLE, "Key": key("node#2")}},
        ]
    )

    found = {i["pk"]["S"] for i in items(dynamodb)}
    assert "node#new" in found and "node#2" not in found and len(found) == 300
