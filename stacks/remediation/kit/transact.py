"""Ledger transactions: several of the ledger's rules applied together or not at all, as one
``TransactWriteItems`` task. No typed task exists for it, so its items are written here in
the SDK's wire shapes (``{"S": ...}``), from the rules' own text and placeholders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK
from nodemedic.remediate import breaker, ledger, parking
from nodemedic.remediate.expressions import Condition, Update
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import expression_values, formatted, text_at

Wire = dict[str, Any]
TRANSACTION_CANCELED = "DynamoDb.TransactionCanceledException"
"""What an ``aws-sdk`` transaction whose condition failed raises (its service is spelled
``DynamoDb`` there, unlike the optimized DynamoDB tasks)."""


def text(value: str) -> Wire:
    return {"S": value}


def number(path: str) -> Wire:
    return {"N": formatted("{}", path)}


def instance_set(path: str) -> Wire:
    """The instance at ``path`` as a string set, the breaker's unit."""
    return {"SS": sfn.JsonPath.array(text_at(path))}


def lock_of(instance: str) -> dict[str, Wire]:
    """The node lock's key, of the instance at path ``instance``."""
    return ledger.key(text(text_at(instance)), text(LOCK_SK))


def breaker_of(group: str) -> dict[str, Wire]:
    """The breaker's key, of the node group at path ``group``."""
    return ledger.key(text(formatted(ledger.BREAKER_PK, group)), text(BREAKER_SK))


def cluster_breaker_of(cluster: str) -> dict[str, Wire]:
    """The cluster's breaker key (``nodemedic.remediate.breaker``)."""
    return ledger.key(text(breaker.CLUSTER_PK.format(cluster)), text(breaker.CLUSTER_SK))


@dataclass(frozen=True)
class Item:
    """One item of a transaction: ``change`` under ``condition``, or, without a change,
    ``condition`` checked on an item the transaction does not write."""

    key: Mapping[str, Wire]
    values: Mapping[str, Wire]
    condition: Condition | None = None
    change: Update | None = None

    def wire(self, table: str) -> dict[str, Any]:
        rules = [r for r in (self.condition, self.change) if r is not None]
        shape: dict[str, Any] = {
            "TableName": table,
            "Key": dict(self.key),
            "ExpressionAttributeValues": expression_values(self.values, *rules),
        }
        if self.condition is not None:
            shape["ConditionExpression"] = self.condition.text
        if self.change is None:
            return {"ConditionCheck": shape}
        shape["UpdateExpression"] = self.change.text
        if self.change.names:
            shape["ExpressionAttributeNames"] = self.change.names
        return {"Update": shape}


def both_breakers(group: str, holder: str, cluster: str, change: Update) -> list[Item]:
    """``change`` of the ``:holder`` set (the instance at path ``holder``) on the breaker of
    the node group at path ``group`` and on the cluster's: a node counts on both or neither."""
    values = {":holder": instance_set(holder)}
    return [
        Item(breaker_of(group), values, change=change),
        Item(cluster_breaker_of(cluster), values, change=change),
    ]


def held_out_breakers(group: str, holder: str, cluster: str) -> list[Item]:
    """A node a person's decision holds out (``parking.HELD_OUT``): counted on the breaker of
    the node group at path ``group`` (its capacity), taken off the cluster's, whose
    ``max_in_flight`` counts remediations."""
    values = {":holder": instance_set(holder)}
    return [
        Item(breaker_of(group), values, change=parking.COUNT),
        Item(cluster_breaker_of(cluster), values, change=parking.UNCOUNT),
    ]


def transaction(flow: Flow, id: str, items: Sequence[Item], *, guard: bool) -> sfn.TaskStateBase:
    """The items in one transaction: a failed condition cancels all of them
    (``DynamoDB.TransactionCanceledException``)."""
    table = flow.ledger
    first, *more = sorted(
        {"dynamodb:UpdateItem" if i.change else "dynamodb:ConditionCheckItem" for i in items}
    )
    task = tasks.CallAwsService(
        flow.scope,
        id,
        service="dynamodb",
        action="transactWriteItems",
        iam_action=first,
        iam_resources=[table.table_arn],
        additional_iam_statements=[iam.PolicyStatement(actions=more, resources=[table.table_arn])]
        if more
        else None,
        parameters={"TransactItems": [item.wire(table.table_name) for item in items]},
        result_path=sfn.JsonPath.DISCARD,
    )
    return flow.guard(task) if guard else task
