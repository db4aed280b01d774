"""The agent's half of proof of origin: a signing key per boot, registered at start with
the instance identity document and again every ``REGISTER_INTERVAL`` while the agent runs,
and the mark on every event (``nodemedic.origin``).

The key stays in the state directory (mode 0600) for the boot it was made for, so an agent
restart keeps signing with the key its boot registered first (a boot has one key: the
classifier refuses a second, and takes the same key again). The registration is encrypted
under the cluster's origin key with the instance as encryption context: log readers never
see the key or the identity document, and a registration decrypts only as its own
instance's.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import secrets
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from agent.batch import Batch, Batcher
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    identity_stream,
    kmsg_stream,
    origin_key_alias,
    registration_message,
)
from nodemedic.origin.signing import KEY_BYTES, Registration, sign

REGISTER_INTERVAL = 6 * 3600.0
"""Seconds between two registrations of the same key. The log group deletes a registration
once it is older than the retention (``log_retention_days``, 1 day at the least CloudWatch
allows), and with the last one goes the proof of every line the key signs. Every 6 hours
keeps four within the shortest retention, so a try that fails (KMS or IMDS away for a
while) still leaves a registration behind it; each costs one KMS Encrypt and one event."""

Signer = Callable[[int, str], str]
"""(event timestamp ms, text) -> the text as shipped, behind the signature mark."""


def boot_key(state_dir: Path, boot_id: str) -> bytes:
    """This boot's key: the one saved for ``boot_id``, or a new one saved in its place."""
    path = state_dir / "origin-key.json"
    try:
        saved = json.loads(path.read_text(encoding="ascii"))
        if saved["boot_id"] == boot_id:
            key = base64.b64decode(saved["key"], validate=True)
            if len(key) == KEY_BYTES:
                return key
    except (OSError, ValueError, KeyError, TypeError):
        pass
    key = secrets.token_bytes(KEY_BYTES)
    text = json.dumps({"boot_id": boot_id, "key": base64.b64encode(key).decode("ascii")})
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(text)
    temporary.replace(path)
    return key


def keep_registered(
    register: Callable[[], bool],
    wait: Callable[[float], bool],
    registered: bool,
    interval: float = REGISTER_INTERVAL,
    retry: float = 60.0,
) -> None:
    """Register again ``interval`` seconds after a registration, ``retry`` seconds after a
    try that failed, until ``wait`` (a stop event's) says the agent stops."""
    while not wait(interval if registered else retry):
        registered = register()


def signer(key: bytes, instance_id: str) -> Signer:
    return functools.partial(sign, key, instance_id)


Encrypt = Callable[[str, bytes, dict[str, str]], bytes]
"""(KMS key id or alias, plaintext, encryption context) -> the ciphertext blob."""


class SealError(Exception):
    """The registration could not be encrypted (KMS refused, or no credentials)."""


def sealed_registration(encrypt: Encrypt, cluster: str, registration: Registration) -> str:
    """The identity stream's event: ``registration`` encrypted under the cluster's origin
    key, bound to its instance by the encryption context, in base64."""
    blob = encrypt(
        origin_key_alias(cluster),
        registration.to_json().encode(),
        {ORIGIN_CONTEXT_CLUSTER: cluster, ORIGIN_CONTEXT_INSTANCE: registration.instance_id},
    )
    return base64.b64encode(blob).decode("ascii")


def registration_batches(instance_id: str, sealed: str, at_ms: int) -> list[Batch]:
    """The batches that carry a sealed registration, both unsigned (no key of the boot is
    known until it is registered): the kmsg stream's, queued ahead of every line the key
    signs, so the subscription brings it to the classifier first and the classifier keeps
    it; and the identity stream's, which a classifier that missed it reads back."""
    batches = []
    for stream, message in (
        (kmsg_stream(instance_id), registration_message(sealed)),
        (identity_stream(instance_id), sealed),
    ):
        batcher = Batcher(stream)
        batcher.add(at_ms, message)
        flushed = batcher.flush()
        if flushed is not None:
            batches.append(flushed)
    return batches


def kms_encrypt(region: str, endpoint_url: str | None, timeout: float = 10.0) -> Encrypt:
    """KMS Encrypt as one SigV4-signed request (botocore's signer, already loaded for the
    logs client). A boto3 KMS client would load KMS's whole service model for this one call
    a boot: about 9 MB more RSS for the life of the agent, measured (bench/agent.py). The
    endpoint is the commercial partition's unless ``endpoint_url`` says otherwise."""

    def encrypt(key_id: str, plaintext: bytes, context: dict[str, str]) -> bytes:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        from agent.botosession import session

        credentials = session().get_credentials()
        if credentials is None:
            raise SealError("no AWS credentials to call KMS with")
        body = json.dumps(
            {
                "KeyId": key_id,
                "Plaintext": base64.b64encode(plaintext).decode("ascii"),
                "EncryptionContext": context,
            }
        ).encode()
        request = AWSRequest(
            "POST",
            endpoint_url or f"https://kms.{region}.amazonaws.com/",
            data=body,
            headers={
                "Content-Type": "application/x-amz-json-1.1",
                "X-Amz-Target": "TrentService.Encrypt",
            },
        )
        SigV4Auth(credentials.get_frozen_credentials(), "kms", region).add_auth(request)
        prepared = request.prepare()
        # The URL is the region's KMS endpoint, or the configured --endpoint-url.
        call = urllib.request.Request(  # noqa: S310
            prepared.url, data=body, headers=dict(prepared.headers), method="POST"
        )
        try:
            with urllib.request.urlopen(call, timeout=timeout) as response:  # noqa: S310
                answer = json.loads(response.read())
            return base64.b64decode(answer["CiphertextBlob"], validate=True)
        except urllib.error.HTTPError as exc:
            raise SealError(f"KMS Encrypt refused: HTTP {exc.code} {exc.read()[:300]!r}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise SealError(f"KMS Encrypt answered something else: {exc!r}") from exc

    return encrypt
