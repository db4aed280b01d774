"""The classifier's AWS side: threshold hits in DynamoDB, executions in Step Functions."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.classify.errors import error_code, is_transient, retryable
from lambdas.recorded import record_start
from nodemedic.backoff import backoff
from nodemedic.contracts.ledger import HEARTBEAT_PK
from nodemedic.remediate.batch import Starter
from nodemedic.remediate.decision import Decision, recent
from nodemedic.remediate.silence import AGENT_STATE, HEARD_AT, NOTIFIED_AT

_CONFLICT_RETRIES = 5
START_ATTEMPTS: Final = 8
"""Tries of one start within an invocation. Step Functions' ``StartExecution`` bucket
refills many times a second (docs/scale.md): a start it throttled is tried again after a
wait of full jitter (``START_FIRST_WAIT`` doubling to ``START_WAIT_CAP``), and the node is
cordoned seconds later, not after Lambda's run of the batch a minute later."""
START_FIRST_WAIT: Final = 0.25
START_WAIT_CAP: Final = 4.0
START_RESERVE: Final = 8.0
"""Seconds of the invocation kept for the rest of its batch: a start still refused with
less left fails the invocation as retryable (``errors.Retryable``), and Lambda runs the
batch again."""


class DynamoHitCounter:
    """Hits per (node, rule) in the idempotency table, under ``hits#`` keys: a map of line
    id (``LogEvent.line_id``) to time, so a redelivered batch, or a line stored twice, adds
    nothing.

    Optimistic concurrency: two batches of one node can be classified at once, and a lost
    update would hide a hit and delay a threshold. Throttling or a server error raises
    ``Retryable``; a permanent error (access denied, a table gone: the deployment is broken,
    not a line) is raised as it is, and the batch goes to the dead-letter queue after
    Lambda's retries.
    """

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self._table = table_name
        self._client = client or boto3.client("dynamodb")

    def add(self, key: str, hits: Mapping[str, float], window: int) -> list[float]:
        for _ in range(_CONFLICT_RETRIES):
            item = self._client.get_item(
                TableName=self._table, Key={"id": {"S": key}}, ConsistentRead=True
            ).get("Item")
            old = {e: float(v["N"]) for e, v in item["hits"]["M"].items()} if item else {}
            kept = recent({**old, **hits}, window)
            version = int(item["version"]["N"]) if item else 0
            try:
                self._client.put_item(
                    TableName=self._table,
                    Item={
                        "id": {"S": key},
                        "hits": {"M": {e: {"N": str(Decimal(str(t)))} for e, t in kept.items()}},
                        "version": {"N": str(version + 1)},
                        "expiration": {"N": str(int(max(kept.values())) + window)},
                    },
                    ConditionExpression="attribute_not_exists(id) OR version = :v",
                    ExpressionAttributeValues={":v": {"N": str(version)}},
                )
            except ClientError as exc:
                if is_transient(exc):
                    raise retryable(exc, f"recording hits of {key}") from exc
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise
                continue
            return list(kept.values())
        raise RuntimeError(f"could not record hits for {key}: too many concurrent writers")


class DynamoHeartbeats:
    """The last heartbeat of each node, in the ledger (``HEARTBEAT_PK``): one UpdateItem,
    never moving ``heard_at`` back, and clearing the mark of a silence already notified."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self._table = table_name
        self._client = client or boto3.client("dynamodb")

    def record(self, instance_id: str, at: float, state: Mapping[str, int]) -> None:
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": HEARTBEAT_PK}, "sk": {"S": instance_id}},
                UpdateExpression=f"SET {HEARD_AT} = :at, {AGENT_STATE} = :state "
                f"REMOVE {NOTIFIED_AT}",
                ConditionExpression=f"attribute_not_exists({HEARD_AT}) OR {HEARD_AT} < :at",
                ExpressionAttributeValues={
                    ":at": {"N": str(int(at))},
                    ":state": {"M": {k: {"N": str(v)} for k, v in state.items()}},
                },
            )
        except ClientError as exc:
            if is_transient(exc):
                raise retryable(exc, f"recording the heartbeat of {instance_id}") from exc
            if error_code(exc) != "ConditionalCheckFailedException":
                raise


def _seconds_left(config: IdempotencyConfig) -> float:
    """The invocation's time left, as its context tells; none where no context was given."""
    context = config.lambda_context
    return context.get_remaining_time_in_millis() / 1000 if context else 0.0


def start_while_time_left(sfn: Any, config: IdempotencyConfig, **request: str) -> bool:
    """Start the execution; False where Step Functions has it already. A throttled or failed
    start, or one whose connection failed, is tried again while the invocation has time
    (botocore's own retries are off for this client); past that it raises ``Retryable``."""
    attempt = 0
    while True:
        try:
            sfn.start_execution(**request)
        except (ClientError, BotoCoreError) as exc:
            if isinstance(exc, ClientError) and error_code(exc) == "ExecutionAlreadyExists":
                return False
            if not is_transient(exc):
                raise
            attempt += 1
            wait = backoff(attempt - 1, START_FIRST_WAIT, START_WAIT_CAP, random.random)
            if attempt == START_ATTEMPTS or _seconds_left(config) - wait < START_RESERVE:
                raise retryable(exc, f"starting {request['name']}") from exc
            time.sleep(wait)
        else:
            return True


def execution_starter(
    state_machine_arn: str,
    table_name: str,
    dedup_window: int,
    ledger_table: str | None,
    client: Any | None = None,
) -> tuple[Starter, IdempotencyConfig]:
    """Start one execution per decision id; repeats within ``dedup_window`` are answered
    from the idempotency record, and a name Step Functions already knows is a duplicate.
    Each start is recorded in ``ledger_table`` first (``nodemedic.remediate.recorded``),
    where the state machine looks before it acts; without a ledger (the classifier's own
    tests) nothing is recorded and the state machine would refuse every decision.

    The config comes back too: the handler registers each invocation's context on it, so
    an in-progress record expires with the invocation that wrote it, not an hour later."""
    # The start's retries are this function's, which know the invocation's time left.
    sfn = client or boto3.client("stepfunctions", config=Config(retries={"total_max_attempts": 1}))
    dynamodb = boto3.client("dynamodb")
    config = IdempotencyConfig(
        event_key_jmespath="decision_id",
        expires_after_seconds=dedup_window,
        raise_on_no_idempotency_key=True,
    )
    store = DynamoDBPersistenceLayer(table_name=table_name)

    def start_execution(request: dict[str, Any]) -> dict[str, Any]:
        decision = request["decision"]
        if ledger_table:
            record_start(dynamodb, ledger_table, decision, starts_at=time.time())
        started = start_while_time_left(
            sfn,
            config,
            stateMachineArn=state_machine_arn,
            name=decision["decision_id"],
            input=json.dumps(decision),
        )
        return {"caller": request["caller"] if started else None}

    start_once: Callable[..., dict[str, Any]] = idempotent_function(
        start_execution, data_keyword_argument="request", persistence_store=store, config=config
    )

    def start(decision: Decision) -> bool:
        # A repeat is answered with the first call's stored result; the caller nonce tells
        # whether this call is the one that started the execution.
        caller = uuid.uuid4().hex
        record = decision.to_record()
        outcome = start_once(
            request={"decision_id": decision.decision_id, "caller": caller, "decision": record}
        )
        return bool(outcome["caller"] == caller)

    return start, config
