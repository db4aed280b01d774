"""The ledger's DynamoDB table, created in moto the way the stack defines its keys (``pk``,
``sk``), for tests that run a handler against it without deploying the stack."""

from __future__ import annotations

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
