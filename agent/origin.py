"""The agent's half of proof of origin: a signing key per boot, registered once per start
with the instance identity document, and the mark on every event (``nodemedic.origin``).

The key stays in the state directory (mode 0600) for the boot it was made for, so an agent
restart keeps signing with the key its boot registered first (a boot has one key: the
classifier refuses a second). The registration is encrypted under the cluster's origin key
with the instance as encryption context: log readers never see the key or the identity
document, and a registration decrypts only as its own instance's.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodemedic.contracts import ORIGIN_CONTEXT_CLUSTER, ORIGIN_CONTEXT_INSTANCE, origin_key_alias
from nodemedic.origin.signing import KEY_BYTES, Registration, sign

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


def signer(key: bytes, instance_id: str) -> Signer:
    return functools.partial(sign, key, instance_id)


def sealed_registration(kms: Any, cluster: str, registration: Registration) -> str:
    """The identity stream's event: ``registration`` encrypted under the cluster's origin
    key, bound to its instance by the encryption context, in base64."""
    answer = kms.encrypt(
        KeyId=origin_key_alias(cluster),
        Plaintext=registration.to_json().encode(),
        EncryptionContext={
            ORIGIN_CONTEXT_CLUSTER: cluster,
            ORIGIN_CONTEXT_INSTANCE: registration.instance_id,
        },
    )
    return base64.b64encode(answer["CiphertextBlob"]).decode("ascii")
