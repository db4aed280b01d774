"""The classifier's registry of agent keys.

An agent ships its boot's registration as the first line of its kmsg stream
(``REGISTRATION_MARK``), so the subscription brings it here ahead of the lines its key
signs. The classifier proves it once (decrypted with the cluster's origin key, which no
agent holds, and checked against AWS's certificate for the Region it runs in, or the
cluster's ``identity_certificates``) and keeps it in the ledger (``kept``), which only the
classifier writes. A line's key is then looked up there: one Query per instance and batch,
one ``kms:Decrypt`` per key a container meets.

Everything in the node log group is written with the agents' shared credential, so anyone
holding it can put any number of events into any stream. The work such events cause is
bounded per batch and per node, whatever they are: at most ``LEARN_DECRYPTS`` registration
lines of a batch are decrypted, and a text already checked costs nothing again. Only a key
the ledger does not hold (its registration line was lost, or came from an agent that ships
none) reads the node's identity stream, at most once per ``READ_INTERVAL`` and only its
``READ_DECRYPTS`` newest events. A read, a query or a decrypt that fails leaves that node's
lines unverifiable, never the batch retried.

A key proves only the lines of its own boot (``BootWindow``): an earlier boot's key stops
proving once a later boot registered. A line that must be judged against every boot
registered before it (``fresh``: one that would act on its node) queries the ledger again
in its batch.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.classify.errors import error_code, is_transient
from lambdas.classify.kept import Kept, KeptTable
from lambdas.observability import logger
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    identity_stream,
    node_log_group,
    parse_registration,
)
from nodemedic.origin.identity import OriginError, RsaCertificate, vendored_certificates
from nodemedic.origin.signing import OutOfBoot, Registration, boot_windows, check_registration
from nodemedic.remediate.batch import LogEvent

READ_INTERVAL = 30.0
"""Seconds between two reads of one instance's identity stream."""
READ_DECRYPTS = 50
"""The newest events of an identity stream one read decrypts: a key registered before them
is found only in the ledger."""
LEARN_DECRYPTS = 50
"""Registration lines of one batch decrypted: an agent ships one per registration."""
REFUSALS_TOLD = 3
"""Distinct reasons of refused registrations quoted when none of an instance holds."""


class Unavailable(OriginError):
    """AWS was throttling, failing or away: the key cannot be known now."""


@dataclass
class _Boot:
    key_id: str
    registered_ms: int
    sealed: str
    registration: Registration | None = None
    """Once this container decrypted and checked it."""


@dataclass
class _Node:
    """What this container knows of one instance's registrations."""

    boots: dict[str, _Boot] = field(default_factory=dict)
    """By boot id: each boot's one key, the first proved."""
    checked: dict[str, str] = field(default_factory=dict)
    """Digest of a sealed text -> why it was refused, or "" once it was proved."""
    loaded_in: int = -1
    """The batch in which the ledger was last read for the instance."""
    read_at: float | None = None
    unasked: str = ""
    """Why the last query of the ledger did not answer."""
    unread: str = ""
    """Why the last read of the identity stream, or a decrypt, did not answer."""

    @property
    def trouble(self) -> str:
        return "; ".join(why for why in (self.unasked, self.unread) if why)

    def boot_of(self, key_id: str) -> tuple[str, _Boot] | None:
        return next(((b, boot) for b, boot in self.boots.items() if boot.key_id == key_id), None)


class LogsRegistrations:
    """The keys of the nodes whose lines this container proved (the module says how they
    are found, and what bounds the work)."""

    def __init__(
        self,
        cluster: str,
        certificates: Sequence[RsaCertificate] | None = None,
        logs: Any | None = None,
        kms: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        table: KeptTable | None = None,
    ) -> None:
        """``certificates``: None for AWS's own, of the Region of the ``logs`` client.
        ``table``: None keeps what is proved in this container only."""
        self.cluster = cluster
        self._logs = logs or boto3.client("logs")
        self._kms = kms or boto3.client("kms")
        self.region: str = self._logs.meta.region_name
        self.certificates = (
            vendored_certificates(self.region) if certificates is None else tuple(certificates)
        )
        self._clock = clock
        self._table = table
        self._nodes: dict[str, _Node] = {}
        self._batch = 0
        self._learn_left = LEARN_DECRYPTS

    def begin(self) -> None:
        """A new batch: the ledger may be queried again, registration lines decrypted."""
        self._batch += 1
        self._learn_left = LEARN_DECRYPTS

    def learn(self, instance_id: str, events: list[LogEvent]) -> list[LogEvent]:
        """Prove and keep the registrations among ``events`` (of ``instance_id``'s streams);
        the other events, which are classified."""
        rest = []
        for event in events:
            sealed = parse_registration(event.message)
            if sealed is None:
                rest.append(event)
            elif self.certificates and self._learn_left > 0:
                node = self._nodes.setdefault(instance_id, _Node())
                if _digest(sealed) not in node.checked:
                    self._learn_left -= 1
                    self._prove(instance_id, node, event.timestamp_ms, sealed)
        return rest

    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        if not self.certificates:
            raise OriginError(
                f"no identity certificate for Region {self.region}: list its RSA "
                "certificate in the cluster setting identity_certificates"
            )
        node = self._nodes.setdefault(instance_id, _Node())
        if (fresh or node.boot_of(key_id) is None) and node.loaded_in != self._batch:
            self._load(instance_id, node)
        now = self._clock()
        if node.boot_of(key_id) is None and (
            node.read_at is None or now - node.read_at >= READ_INTERVAL
        ):
            self._read(instance_id, node, key_id)
        found = node.boot_of(key_id)
        if found is None:
            if not node.boots:
                raise OriginError(_nothing_holds(instance_id, node))
            if node.trouble:
                raise OriginError(f"{instance_id}'s newest keys cannot be known: {node.trouble}")
            return None
        boot_id, boot = found
        windows = boot_windows([(b.registered_ms, i) for i, b in node.boots.items()])
        refusal = windows[boot_id].refusal(key_id, written_ms)
        if refusal:
            raise OutOfBoot(refusal)
        if boot.registration is None:
            boot.registration = self._opened(instance_id, boot_id, boot)
        return boot.registration

    def _load(self, instance_id: str, node: _Node) -> None:
        node.loaded_in = self._batch
        if self._table is None:
            return
        try:
            kept = self._table.load(instance_id)
        except (ClientError, BotoCoreError) as exc:
            if isinstance(exc, ClientError) and not is_transient(exc):
                raise  # the ledger refused: the deployment is broken, not a line
            node.unasked = f"the ledger cannot be read now: {_code(exc)}"
            return
        node.unasked = ""
        for item in kept:
            boot = node.boots.get(item.boot_id)
            if boot is None or boot.key_id != item.key_id:
                node.boots[item.boot_id] = _Boot(item.key_id, item.registered_ms, item.sealed)
            else:
                boot.registered_ms = min(boot.registered_ms, item.registered_ms)

    def _read(self, instance_id: str, node: _Node, key_id: str) -> None:
        """The identity stream's newest events, for a key the ledger does not hold."""
        node.read_at = self._clock()
        try:
            page = self._logs.get_log_events(
                logGroupName=node_log_group(self.cluster),
                logStreamName=identity_stream(instance_id),
                startFromHead=False,
                limit=READ_DECRYPTS,
            )
        except (ClientError, BotoCoreError) as exc:
            missing = _code(exc) == "ResourceNotFoundException"
            node.unread = "" if missing else f"its identity stream cannot be read: {_code(exc)}"
            return
        node.unread = ""
        for event in list(reversed(page["events"]))[:READ_DECRYPTS]:
            if _digest(event["message"]) not in node.checked:
                self._prove(instance_id, node, event["timestamp"], event["message"])
            if node.boot_of(key_id) is not None or node.unread:
                return

    def _prove(self, instance_id: str, node: _Node, written_ms: int, sealed: str) -> None:
        """Check one sealed registration and keep it when it holds; AWS away leaves it to be
        checked again (``unread``)."""
        digest = _digest(sealed)
        try:
            registration = self._checked(instance_id, sealed)
        except Unavailable as exc:
            node.unread = str(exc)
            return
        except OriginError as exc:
            node.checked[digest] = str(exc)
            logger.warning("registration refused", extra={"instance_id": instance_id})
            return
        boot = node.boots.get(registration.boot_id)
        if boot is not None and boot.key_id != registration.key_id:
            node.checked[digest] = (
                f"key {registration.key_id} for boot {registration.boot_id} of {instance_id}: "
                f"that boot registered key {boot.key_id} first"
            )
            logger.warning("registration refused", extra={"instance_id": instance_id})
            return
        node.checked[digest] = ""
        if boot is None:
            boot = node.boots[registration.boot_id] = _Boot(
                registration.key_id, written_ms, sealed, registration
            )
        boot.registered_ms = min(boot.registered_ms, written_ms)
        if self._table is not None:
            self._keep(
                instance_id, node, Kept(registration.boot_id, boot.key_id, written_ms, sealed)
            )

    def _keep(self, instance_id: str, node: _Node, kept: Kept) -> None:
        assert self._table is not None
        try:
            if not self._table.keep(instance_id, kept):
                # Another key of the boot was kept first (by another container): the
                # ledger's is the boot's key.
                del node.boots[kept.boot_id]
                node.loaded_in = -1
        except (ClientError, BotoCoreError) as exc:
            if isinstance(exc, ClientError) and not is_transient(exc):
                raise
            # Kept in this container; the identity stream still holds it for the others.
            logger.warning(
                "registration not kept", extra={"instance_id": instance_id, "error": _code(exc)}
            )

    def _opened(self, instance_id: str, boot_id: str, boot: _Boot) -> Registration:
        registration = self._checked(instance_id, boot.sealed)
        if (registration.boot_id, registration.key_id) != (boot_id, boot.key_id):
            raise OriginError(f"the ledger's registration of boot {boot_id} is not its key's")
        return registration

    def _checked(self, instance_id: str, sealed: str) -> Registration:
        registration = Registration.from_json(self._decrypt(instance_id, sealed))
        check_registration(registration, instance_id, self.certificates, datetime.now(UTC))
        return registration

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
        except (ClientError, BotoCoreError) as exc:
            if is_transient(exc):
                raise Unavailable(f"KMS cannot decrypt now: {_code(exc)}") from exc
            # A key of another account, one disabled or pending deletion, a blob that is no
            # ciphertext of this key: this registration is refused, with the reason.
            raise OriginError(
                f"a registration does not decrypt as {instance_id}'s: {_code(exc)}"
            ) from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _code(exc: ClientError | BotoCoreError) -> str:
    return error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__


def _nothing_holds(instance_id: str, node: _Node) -> str:
    """Why no key of ``instance_id`` is known: its registrations refused, or unread."""
    refused = sorted({why for why in node.checked.values() if why})
    why = [*refused[:REFUSALS_TOLD], *([node.trouble] if node.trouble else [])]
    if not why:
        return f"no registration of {instance_id} found"
    return f"no registration of {instance_id} holds: {'; '.join(why)}"
