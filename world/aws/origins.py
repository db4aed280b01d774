"""Proof of origin for nodes that run no agent process: one identity per node, registered and
signed with the agent's own code, so that a world of 1,500 nodes (``bench/scale.py``) ships
what 1,500 agents would and the classifier proves the origin of every line as it does on a
cluster that enforces it.

An identity is what ``agent.main`` makes at start: a fresh boot key, a ``Registration`` with
the instance identity document the world's IMDS serves the instance (``identity.py``),
sealed under the cluster's origin key with the instance as encryption context, and queued
unsigned ahead of every line the key signs (``agent.origin.registration_batches``). Only the
KMS call differs: a boto3 client of this process, not the agent's single signed request.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.imds import identity_document
from agent.origin import Encrypt, registration_batches, sealed_registration
from nodemedic.origin.signing import KEY_BYTES, Registration, sign

Batch = tuple[str, list[tuple[int, str]]]
"""(log stream, [(timestamp ms, message)]): one PutLogEvents request."""
IMDS_READ_SECONDS = 120.0
"""How long a read of the world's IMDS may take. The agent's 2 s suits an instance's own
metadata service; the world's is served by the busy world process, which at 1,500 nodes
under load took longer than that, and a registration that gave up failed the whole run."""


@dataclass(frozen=True)
class NodeIdentity:
    """A node's boot key and the batches that register it."""

    instance_id: str
    key: bytes
    registration: list[Batch]

    def signed(self, text: str, at_ms: int) -> str:
        """``text`` as the node's agent ships it at ``at_ms``: behind its signature mark."""
        return sign(self.key, self.instance_id, at_ms, text)


def kms_encrypt(kms: Any) -> Encrypt:
    """KMS Encrypt through a boto3 client (moto's: the world's and the flow tests')."""

    def encrypt(key_id: str, plaintext: bytes, context: dict[str, str]) -> bytes:
        answer = kms.encrypt(KeyId=key_id, Plaintext=plaintext, EncryptionContext=context)
        return bytes(answer["CiphertextBlob"])

    return encrypt


def node_identity(
    instance_id: str,
    boot_id: str,
    cluster: str,
    metadata: Callable[[str], str],
    encrypt: Encrypt,
) -> NodeIdentity:
    """A new boot key for ``instance_id``, registered with the identity document the world's
    IMDS at ``metadata(instance_id)`` serves it."""
    document, signature = identity_document(metadata(instance_id), IMDS_READ_SECONDS)
    key = secrets.token_bytes(KEY_BYTES)
    sealed = sealed_registration(
        encrypt, cluster, Registration(instance_id, boot_id, key, document, signature)
    )
    batches = registration_batches(instance_id, sealed, int(time.time() * 1000))
    return NodeIdentity(instance_id, key, [(b.stream, list(b.events)) for b in batches])
