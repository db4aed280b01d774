"""A job's monitoring state in the ledger: one item per rule and one for its restarts.

Every write is conditional on the version read, so two deliveries of one job evaluated at
once cannot lose each other's lines, and the restart item's ``epoch`` (when the current run
started) is the idempotency of a restart: only the writer that moves it on acts, so a
verdict restarts a job once however many deliveries or schedule runs see it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from nodemedic.contracts import RESTARTS_SK, RULE_SK_PREFIX, job_pk
from nodemedic.jobs.evaluate import RuleState
from nodemedic.jobs.restart import RestartHistory


class Conflict(RuntimeError):
    """Another writer changed the job's state since it was read; read it again."""


@dataclass(frozen=True)
class Stored:
    epoch: float | None
    history: RestartHistory
    states: dict[str, RuleState]
    versions: dict[str, int]
    """Version of each item read, by sort key (0: not there)."""


class JobStore:
    def __init__(self, table: str, client: Any | None = None) -> None:
        self._table = table
        self._client = client or boto3.client("dynamodb")

    def load(self, namespace: str, name: str) -> Stored:
        items = self._client.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": job_pk(namespace, name)}},
            ConsistentRead=True,
        )["Items"]
        versions = {i["sk"]["S"]: int(i["version"]["N"]) for i in items}
        body = {i["sk"]["S"]: json.loads(i["body"]["S"]) for i in items}
        restarts = body.get(RESTARTS_SK, {})
        return Stored(
            epoch=restarts.get("epoch"),
            history=RestartHistory.from_item(restarts),
            states={
                sk.removeprefix(RULE_SK_PREFIX): RuleState.from_item(value)
                for sk, value in body.items()
                if sk.startswith(RULE_SK_PREFIX)
            },
            versions=versions,
        )

    def save_states(
        self, namespace: str, name: str, states: Mapping[str, RuleState], stored: Stored
    ) -> None:
        """Writes the states that changed; Conflict if another writer was first."""
        for rule, state in states.items():
            if stored.states.get(rule) != state:
                self._put(namespace, name, RULE_SK_PREFIX + rule, state.as_item(), stored)

    def claim(
        self, namespace: str, name: str, stored: Stored, history: RestartHistory, epoch: float
    ) -> bool:
        """Records the restart history and the new run's epoch; False if another writer
        already acted on this run."""
        try:
            self._put(namespace, name, RESTARTS_SK, {**history.as_item(), "epoch": epoch}, stored)
        except Conflict:
            return False
        return True

    def _put(
        self, namespace: str, name: str, sk: str, body: Mapping[str, object], stored: Stored
    ) -> None:
        version = stored.versions.get(sk, 0)
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    "pk": {"S": job_pk(namespace, name)},
                    "sk": {"S": sk},
                    "version": {"N": str(version + 1)},
                    "body": {"S": json.dumps(body, sort_keys=True)},
                },
                ConditionExpression="attribute_not_exists(pk) OR version = :v",
                ExpressionAttributeValues={":v": {"N": str(version)}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise Conflict(f"{job_pk(namespace, name)} {sk} changed") from exc
            raise
