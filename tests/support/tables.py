"""The ledger's DynamoDB table, created in moto the way the stack defines its keys (``pk``,
``sk``), for tests that run a handler against it without deploying the stack; and a table
keyed by ``pk`` alone, for tests of how the world's moto answers a call."""

from __future__ import annotations

from typing import Any

import boto3


def create_ledger_table(name: str) -> str:
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def create_pk_table(client: Any, name: str) -> str:
    """A table keyed by a string ``pk`` alone, made by ``client`` (a DynamoDB client)."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name
