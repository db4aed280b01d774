"""The classifier's registry of agent keys: the registrations of a key a line names, read
with ``logs:GetLogEvents`` from that key's own stream (``<instance>/identity/<key-id>``)
when the key is not known yet, decrypted with the cluster's origin key (``kms:Decrypt``,
which no agent holds) and checked against AWS's certificate for the Region the classifier
runs in (or the cluster's ``identity_certificates``).

Identity streams are written with the agents' shared credential, so whoever holds it can
put any number of events in any of them. Two bounds keep what that costs, and what it can
hide, the same whatever was written:

- Where to look is named by the line: a registration is read from its key's stream, not
  from one stream per instance that every holder of the credential can bury it in. To put
  an event there, a writer needs the key id, which only the node's lines carry, and no
  node can read another's lines.
- How much one read costs: one ``GetLogEvents`` call (the stream's newest page), at most
  ``DECRYPTS_PER_READ`` decrypts of events not met before (each remembered by its text,
  refused or not, for the life of the container), and one read per instance every
  ``READ_INTERVAL``, whatever key a line names.

An AWS error a read meets (throttling, KMS or Logs away) stops that read only: the lines
of keys it did not learn are unverifiable, with the reason, and the batch goes on.

A key proves only the lines of its own boot (``BootWindow``): an earlier boot's key stops
proving once a later boot registered. The agent writes a boot's first registration into
the previous boot's key stream too, so a read of the earlier key finds the later boot. A
line that must be judged against every boot registered before it (``fresh``: one that
would act on its node) reads its key's stream again when it is newer than every line read
for, once the interval since the last read is over.
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
from lambdas.observability import logger
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    key_stream,
    node_log_group,
)
from nodemedic.origin.identity import OriginError, RsaCertificate, vendored_certificates
from nodemedic.origin.signing import (
    BootWindow,
    OutOfBoot,
    Registration,
    boot_windows,
    check_registration,
    first_per_boot,
)

READ_INTERVAL = 30.0
"""Seconds between two reads for one instance, whatever key they are for. A key whose
registration was not visible yet at a read is found by the next one: a boot's first lines
may wait that long to prove, and are unverifiable meanwhile."""
DECRYPTS_PER_READ = 50
"""Events one read decrypts at most; what it did not reach, a later read goes on with."""
REFUSALS_TOLD = 3
"""Distinct reasons of refused registrations quoted when none of an instance holds."""


class _Unavailable(Exception):
    """An AWS service a read needs is throttling, failing or away: the read stops there."""


@dataclass
class _Instance:
    """What this container knows of one instance's registrations."""

    checked: dict[str, tuple[int, Registration] | str] = field(default_factory=dict)
    """Digest of an event's text -> (event time, its registration) when it holds, or why
    it was refused."""
    held: dict[str, Registration] = field(default_factory=dict)
    """The registrations that hold, by key id (the first key of each boot)."""
    windows: dict[str, BootWindow] = field(default_factory=dict)
    """When each key's boot may have written lines, by key id."""
    absent: set[str] = field(default_factory=set)
    """Key ids whose stream a whole read went through without a registration of them."""
    read_at: float | None = None
    read_for_ms: int = -1
    """The newest line time a read was made for."""
    trouble: str = ""
    """What kept the last read from its whole stream."""


class LogsRegistrations:
    def __init__(
        self,
        cluster: str,
        certificates: Sequence[RsaCertificate] | None = None,
        logs: Any | None = None,
        kms: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``certificates``: None for AWS's own, of the Region of the ``logs`` client."""
        self.cluster = cluster
        self._logs = logs or boto3.client("logs")
        self._kms = kms or boto3.client("kms")
        self.region: str = self._logs.meta.region_name
        self.certificates = (
            vendored_certificates(self.region) if certificates is None else tuple(certificates)
        )
        self._clock = clock
        self._instances: dict[str, _Instance] = {}

    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        if not self.certificates:
            raise OriginError(
                f"no identity certificate for Region {self.region}: list its RSA "
                "certificate in the cluster setting identity_certificates"
            )
        known = self._instances.setdefault(instance_id, _Instance())
        due = known.read_at is None or self._clock() - known.read_at >= READ_INTERVAL
        if due and (key_id not in known.held or (fresh and written_ms > known.read_for_ms)):
            known.read_for_ms = max(known.read_for_ms, written_ms)
            self._read(instance_id, known, key_id)
        if key_id in known.held:
            window = known.windows.get(key_id)
            refusal = window and window.refusal(key_id, written_ms)
            if refusal:
                raise OutOfBoot(refusal)
            return known.held[key_id]
        if key_id not in known.absent and key_id not in _held_ids(known):
            raise OriginError(
                known.trouble
                or f"{instance_id}'s key streams are read once every {READ_INTERVAL:.0f} s, "
                "and a read for another key came first"
            )
        if not known.held:
            # No key of the instance is known to tell a forgery from a node whose agent
            # cannot register: unverifiable.
            raise OriginError(
                f"it is not registered by {instance_id}, and {_nothing_holds(instance_id, known)}"
            )
        return None

    def _read(self, instance_id: str, known: _Instance, key_id: str) -> None:
        """One page of ``key_id``'s stream, newest first, up to ``DECRYPTS_PER_READ``
        decrypts; stops at a registration of that key."""
        known.read_at = self._clock()
        known.trouble = ""
        known.absent.discard(key_id)
        stream = key_stream(instance_id, key_id)
        try:
            page = self._logs.get_log_events(
                logGroupName=node_log_group(self.cluster),
                logStreamName=stream,
                startFromHead=False,
            )
            if not self._through(instance_id, known, key_id, page["events"]):
                known.absent.add(key_id)
            elif key_id not in _held_ids(known):
                known.trouble = f"the read of {stream} stopped after {DECRYPTS_PER_READ} decrypts"
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                known.absent.add(key_id)
            else:
                known.trouble = f"{stream} cannot be read: {error_code(exc)}"
        except BotoCoreError as exc:
            known.trouble = f"{stream} cannot be read: {type(exc).__name__}"
        except _Unavailable as exc:
            known.trouble = f"the read of {stream} stopped: {exc}"
        held = sorted((r for r in known.checked.values() if not isinstance(r, str)), key=_time)
        known.held, refused = first_per_boot([registration for _, registration in held])
        known.windows = boot_windows(held)
        reasons = refused + [r for r in known.checked.values() if isinstance(r, str)]
        if reasons:
            logger.warning(
                "registrations refused",
                extra={"instance_id": instance_id, "count": len(reasons), "reasons": reasons[:3]},
            )

    def _through(
        self, instance_id: str, known: _Instance, key_id: str, events: list[dict[str, Any]]
    ) -> bool:
        """Check ``events`` newest first until one registers ``key_id`` (True), the page
        ends (False), or the read's decrypts are spent (True: not known to be absent)."""
        decrypts = 0
        for event in reversed(events):
            message = event["message"]
            digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()
            if digest not in known.checked:
                if decrypts == DECRYPTS_PER_READ:
                    return True
                decrypts += 1
                known.checked[digest] = self._check(instance_id, event["timestamp"], message)
            found = known.checked[digest]
            if not isinstance(found, str) and found[1].key_id == key_id:
                return True
        return False

    def _check(
        self, instance_id: str, timestamp: int, message: str
    ) -> tuple[int, Registration] | str:
        """(time, the registration) of one event when it holds, or why not."""
        try:
            registration = Registration.from_json(self._decrypt(instance_id, message))
            check_registration(registration, instance_id, self.certificates, datetime.now(UTC))
        except OriginError as exc:
            return str(exc)
        return timestamp, registration

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
            code = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
            if is_transient(exc):
                # Not this registration's fault: it is decrypted at a later read.
                raise _Unavailable(f"KMS cannot decrypt now: {code}") from exc
            # A key of another account, one disabled or pending deletion, a blob that is no
            # ciphertext of this key: this registration is refused, with the reason.
            raise OriginError(
                f"a registration does not decrypt as {instance_id}'s: {code}"
            ) from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext


def _held_ids(known: _Instance) -> set[str]:
    """The key ids of every registration checked that holds (a boot's second key too)."""
    return {r[1].key_id for r in known.checked.values() if not isinstance(r, str)}


def _time(checked: tuple[int, Registration]) -> int:
    return checked[0]


def _nothing_holds(instance_id: str, known: _Instance) -> str:
    """Why no key of ``instance_id`` is known: its registrations refused, or none found."""
    refused = sorted({r for r in known.checked.values() if isinstance(r, str)})
    why = [*refused[:REFUSALS_TOLD], *([known.trouble] if known.trouble else [])]
    if not why:
        return f"no registration of {instance_id} found"
    return f"no registration of {instance_id} holds: {'; '.join(why)}"
