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

from nodemedic.contracts.jobs import (
    JOB_BREAKER_SK,
    JOB_BREAKER_SK_PREFIX,
    JOB_LINES_HEARD_SK,
    RESTART_WATCH_SK,
    RESTARTS_SK,
    RULE_SK_PREFIX,
    job_cluster_pk,
    job_pk,
)
from nodemedic.jobs.breaker import Breakers
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
    watch: Mapping[str, Any] | None = None
    """The restart whose latency is not measured yet: ``at``, ``replaced`` (pod uids)."""


@dataclass(frozen=True)
class StoredBreaker:
    state: Breakers
    heard_at: float | None
    """When the application log group last delivered; None before the first delivery."""
    version: int


class JobStore:
    def __init__(self, table: str, client: Any | None = None) -> None:
        self._table = table
        self._client = client or boto3.client("dynamodb")

    def _query(self, pk: str, sk_prefix: str = "") -> list[dict[str, Any]]:
        condition, values = "pk = :pk", {":pk": {"S": pk}}
        if sk_prefix:
            condition, values = (
                condition + " AND begins_with(sk, :sk)",
                {
                    **values,
                    ":sk": {"S": sk_prefix},
                },
            )
        items: list[dict[str, Any]] = self._client.query(
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        )["Items"]
        return items

    def load(self, namespace: str, name: str) -> Stored:
        items = self._query(job_pk(namespace, name))
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
            watch=body.get(RESTART_WATCH_SK) or None,
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

    def watch(self, namespace: str, name: str, body: Mapping[str, object], stored: Stored) -> bool:
        """Sets (or, with an empty body, ends) the restart latency watch; False if another
        writer changed it first (that writer published the figure)."""
        try:
            self._put(namespace, name, RESTART_WATCH_SK, body, stored)
        except Conflict:
            return False
        return True

    def load_breaker(self, cluster: str) -> StoredBreaker:
        items = {
            i["sk"]["S"]: i for i in self._query(job_cluster_pk(cluster), JOB_BREAKER_SK_PREFIX)
        }
        breaker, heard = items.get(JOB_BREAKER_SK), items.get(JOB_LINES_HEARD_SK)
        return StoredBreaker(
            state=Breakers.from_item(json.loads(breaker["body"]["S"]) if breaker else {}),
            heard_at=float(heard["heard_at"]["N"]) if heard else None,
            version=int(breaker["version"]["N"]) if breaker else 0,
        )

    def save_breaker(self, cluster: str, state: Breakers, stored: StoredBreaker) -> None:
        """Conflict if another verdict changed the breaker since it was read."""
        self._write(job_cluster_pk(cluster), JOB_BREAKER_SK, state.as_item(), stored.version)

    def heard(self, cluster: str, at: float) -> None:
        """The application log group delivered at ``at`` (kept only if later than known)."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    "pk": {"S": job_cluster_pk(cluster)},
                    "sk": {"S": JOB_LINES_HEARD_SK},
                    "heard_at": {"N": str(at)},
                },
                ConditionExpression="attribute_not_exists(pk) OR heard_at < :at",
                ExpressionAttributeValues={":at": {"N": str(at)}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def _put(
        self, namespace: str, name: str, sk: str, body: Mapping[str, object], stored: Stored
    ) -> None:
        self._write(job_pk(namespace, name), sk, body, stored.versions.get(sk, 0))

    def _write(self, pk: str, sk: str, body: Mapping[str, object], version: int) -> None:
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    "pk": {"S": pk},
                    "sk": {"S": sk},
                    "version": {"N": str(version + 1)},
                    "body": {"S": json.dumps(body, sort_keys=True)},
                },
                ConditionExpression="attribute_not_exists(pk) OR version = :v",
                ExpressionAttributeValues={":v": {"N": str(version)}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise Conflict(f"{pk} {sk} changed") from exc
            raise
