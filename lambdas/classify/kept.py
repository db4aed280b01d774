"""The registrations the classifier proved, kept in the ledger (``REGISTRATION_PK_PREFIX``):
one item per boot, written once with the boot's first key, read back with one Query per
instance. Only the classifier's role writes the partition, so whatever the agents' shared
credential writes into a stream cannot add, replace or hide an item; a container that
starts cold finds every boot's key here instead of reading the identity stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from lambdas.classify.errors import error_code
from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE, registration_pk

KEPT_DAYS = 30
"""How long a boot's item outlives the last registration of its key that reached the
classifier. The agent registers again every 6 hours, and each renewal the classifier proves
moves the item's purge date on: only a boot that ended long ago is forgotten."""


@dataclass(frozen=True)
class Kept:
    boot_id: str
    key_id: str
    registered_ms: int
    """When the first event that carried the registration was written."""
    sealed: str
    """The registration as the agent sealed it: decrypted again by each container that
    needs the key, so no reader of the ledger sees one."""


class KeptTable:
    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self._table = table_name
        self._client = client or boto3.client("dynamodb")

    def load(self, instance_id: str) -> list[Kept]:
        """Every boot's registration kept for ``instance_id``."""
        args: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": registration_pk(instance_id)}},
            "ConsistentRead": True,
        }
        kept = []
        while True:
            page = self._client.query(**args)
            kept += [
                Kept(
                    item["sk"]["S"],
                    item["key_id"]["S"],
                    int(item["registered_ms"]["N"]),
                    item["sealed"]["S"],
                )
                for item in page.get("Items", [])
            ]
            if "LastEvaluatedKey" not in page:
                return kept
            args["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def keep(self, instance_id: str, kept: Kept) -> bool:
        """Keep ``kept`` as its boot's registration; False when the boot's item holds
        another key, kept first. The same key again keeps the first time and sealed text,
        and moves the purge date on."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key={"pk": {"S": registration_pk(instance_id)}, "sk": {"S": kept.boot_id}},
                UpdateExpression="SET key_id = :k, sealed = if_not_exists(sealed, :s), "
                "registered_ms = if_not_exists(registered_ms, :t), #purge = :p",
                ConditionExpression="attribute_not_exists(pk) OR key_id = :k",
                ExpressionAttributeNames={"#purge": HISTORY_TTL_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":k": {"S": kept.key_id},
                    ":s": {"S": kept.sealed},
                    ":t": {"N": str(kept.registered_ms)},
                    ":p": {"N": str(kept.registered_ms // 1000 + KEPT_DAYS * 86400)},
                },
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True
