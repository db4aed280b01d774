"""The marker a Lambda that starts remediations writes first (``nodemedic.remediate.recorded``):
without it the remediation state machine refuses the decision as forged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from nodemedic.remediate.recorded import marker


def record_start(dynamodb: Any, table: str, record: Mapping[str, Any], *, starts_at: float) -> None:
    """Record ``record`` as started by this Lambda, unless its decision id was recorded
    already. The first record stands: a second decision of the same id (an overlapping
    batch, a notice delivered again) differs in its count or time, and its start only
    finds the first one's execution; overwritten, the marker would no longer match what
    that execution was given, and it would be refused as forged."""
    try:
        dynamodb.put_item(
            TableName=table,
            Item=marker(record, starts_at=starts_at),
            ConditionExpression="attribute_not_exists(sk)",
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
