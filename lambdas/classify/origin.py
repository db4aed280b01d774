"""The classifier's registry of agent keys: each instance's identity stream, read with
``logs:GetLogEvents`` when a line names a key not met yet, decrypted with the cluster's
origin key (``kms:Decrypt``, which no agent holds) and checked against AWS's certificate.

Kept for the life of the Lambda container: a registration never changes once written. A
key not found is remembered for ``MISS_SECONDS``, so a flood of lines signed with a key
that does not exist costs one read of the stream, not one per line.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from lambdas.observability import logger
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    identity_stream,
    node_log_group,
)
from nodemedic.origin.der import RsaCertificate
from nodemedic.origin.identity import OriginError
from nodemedic.origin.signing import Registration, check_registration, first_per_boot

MISS_SECONDS = 30.0
MAX_EVENTS = 1000
"""Registrations read per instance (one per agent start: years of restarts)."""


class LogsRegistrations:
    def __init__(
        self,
        cluster: str,
        certificates: Sequence[RsaCertificate],
        logs: Any | None = None,
        kms: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.certificates = certificates
        self._logs = logs or boto3.client("logs")
        self._kms = kms or boto3.client("kms")
        self._clock = clock
        self._keys: dict[str, dict[str, Registration]] = {}
        self._misses: dict[tuple[str, str], float] = {}

    def find(self, instance_id: str, key_id: str) -> Registration | None:
        found = self._keys.get(instance_id, {}).get(key_id)
        if found is not None:
            return found
        missed = self._misses.get((instance_id, key_id))
        if missed is not None and self._clock() - missed < MISS_SECONDS:
            return None
        self._keys[instance_id] = self._read(instance_id)
        found = self._keys[instance_id].get(key_id)
        if found is None:
            self._misses[(instance_id, key_id)] = self._clock()
        return found

    def _read(self, instance_id: str) -> dict[str, Registration]:
        checked = []
        for message in self._messages(instance_id):
            try:
                registration = Registration.from_json(self._decrypt(instance_id, message))
                check_registration(registration, instance_id, self.certificates, datetime.now(UTC))
            except OriginError as exc:
                logger.warning(
                    "registration refused", extra={"instance_id": instance_id, "reason": str(exc)}
                )
                continue
            checked.append(registration)
        held, refused = first_per_boot(checked)
        for reason in refused:
            logger.warning(
                "registration refused", extra={"instance_id": instance_id, "reason": reason}
            )
        return held

    def _messages(self, instance_id: str) -> list[str]:
        """The stream's events in the order written (the first of a boot wins)."""
        messages: list[str] = []
        args = {
            "logGroupName": node_log_group(self.cluster),
            "logStreamName": identity_stream(instance_id),
            "startFromHead": True,
        }
        try:
            while len(messages) < MAX_EVENTS:
                page = self._logs.get_log_events(**args)
                messages += [e["message"] for e in page["events"]]
                if not page["events"] or page.get("nextForwardToken") == args.get("nextToken"):
                    break
                args["nextToken"] = page["nextForwardToken"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
        return messages[:MAX_EVENTS]

    def _decrypt(self, instance_id: str, message: str) -> bytes:
        try:
            blob = base64.b64decode(message, validate=True)
            answer = self._kms.decrypt(
                CiphertextBlob=blob,
                EncryptionContext={
                    ORIGIN_CONTEXT_CLUSTER: self.cluster,
                    ORIGIN_CONTEXT_INSTANCE: instance_id,
                },
            )
        except (binascii.Error, ValueError) as exc:
            raise OriginError("a registration is not base64") from exc
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code not in ("InvalidCiphertextException", "IncorrectKeyException"):
                raise
            raise OriginError(
                f"a registration does not decrypt as {instance_id}'s: {code}"
            ) from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext
