"""The classifier's registry of agent keys: each instance's identity stream, read with
``logs:GetLogEvents`` when a line names a key not met yet, decrypted with the cluster's
origin key (``kms:Decrypt``, which no agent holds) and checked against AWS's certificate
for the Region the classifier runs in (or the cluster's ``identity_certificates``).

The identity stream is written with the agents' shared credential, so whoever holds it
can put any number of events before or after a genuine registration. A read is therefore
bounded by time, not by a count of events: it goes from the stream's end backwards (the
registration of a boot that signs lines now is among the newest), decrypts and checks
each event once per container (remembered by its text, refused or not), and stops at the
key asked for, at the stream's start, or after ``READ_SECONDS``. An instance's stream is
read at most once every ``READ_INTERVAL``, whatever key a line names: a flood of lines
signed with fresh key ids costs one read per interval, not one per line.

A key proves only the lines of its own boot (``BootWindow``): an earlier boot's key stops
proving once a later boot registered. A line that must be judged against every boot
registered before it (``fresh``: one that would act on its node) reads the stream again
when it is newer than every line read for, ``EARLY_READ`` after the last read: a container
that knew only the old boot's key would otherwise go on taking it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.classify.errors import error_code, is_transient, retryable
from lambdas.observability import logger
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    identity_stream,
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
"""Seconds between two reads of one instance's identity stream. A key registered just
after a read is found by the next one: a boot's first lines may wait that long to prove."""
EARLY_READ = 2.0
"""Seconds after a read when a line newer than every line read for so far, under a key not
known, may read the stream again before ``READ_INTERVAL``: a boot registers its key and
signs its first lines at once, and the read its first line made may have come before the
registration landed. A deep check's pass that came then would otherwise be dropped, and its
node left behind the health-check taint. A flood of fresh key ids under old times costs no
more reads."""
READ_SECONDS = 5.0
"""Seconds one read may spend; what it did not reach, a later read goes on with."""
REFUSALS_TOLD = 3
"""Distinct reasons of refused registrations quoted when none of an instance holds."""


@dataclass
class _Stream:
    """What this container knows of one instance's identity stream."""

    checked: dict[str, tuple[int, Registration] | str] = field(default_factory=dict)
    """Digest of an event's text -> (event time, its registration) when it holds, or why
    it was refused."""
    held: dict[str, Registration] = field(default_factory=dict)
    """The registrations that hold, by key id (the first key of each boot)."""
    windows: dict[str, BootWindow] = field(default_factory=dict)
    """When each key's boot may have written lines, by key id."""
    read_at: float | None = None
    read_for_ms: int = -1
    """The newest line time a read was made for."""
    trouble: str = ""
    """What kept the last read from the whole stream."""


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
        self._streams: dict[str, _Stream] = {}

    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        if not self.certificates:
            raise OriginError(
                f"no identity certificate for Region {self.region}: list its RSA "
                "certificate in the cluster setting identity_certificates"
            )
        stream = self._streams.setdefault(instance_id, _Stream())
        since = None if stream.read_at is None else self._clock() - stream.read_at
        newer = written_ms > stream.read_for_ms and (since is None or since >= EARLY_READ)
        due = since is None or since >= READ_INTERVAL or newer
        if (key_id not in stream.held and due) or (fresh and newer):
            stream.read_for_ms = max(stream.read_for_ms, written_ms)
            self._read(instance_id, stream, key_id)
        if not stream.held:
            raise OriginError(_nothing_holds(instance_id, stream))
        window = stream.windows.get(key_id)
        refusal = window and window.refusal(key_id, written_ms)
        if refusal:
            raise OutOfBoot(refusal)
        return stream.held.get(key_id)

    def _read(self, instance_id: str, stream: _Stream, key_id: str) -> None:
        started = stream.read_at = self._clock()
        stream.trouble = ""
        try:
            for timestamp, message in self._newest_first(instance_id):
                digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()
                if digest not in stream.checked:
                    stream.checked[digest] = self._check(instance_id, timestamp, message)
                found = stream.checked[digest]
                if not isinstance(found, str) and found[1].key_id == key_id:
                    break
                if self._clock() - started >= READ_SECONDS:
                    stream.trouble = f"the read stopped after {READ_SECONDS:.0f} s"
                    break
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                if is_transient(exc):
                    raise retryable(exc, f"reading {identity_stream(instance_id)}") from exc
                stream.trouble = f"its identity stream cannot be read: {error_code(exc)}"
        except BotoCoreError as exc:
            raise retryable(exc, f"reading {identity_stream(instance_id)}") from exc
        held = sorted((r for r in stream.checked.values() if not isinstance(r, str)), key=_time)
        stream.held, refused = first_per_boot([registration for _, registration in held])
        stream.windows = boot_windows(held)
        reasons = refused + [r for r in stream.checked.values() if isinstance(r, str)]
        if reasons:
            logger.warning(
                "registrations refused",
                extra={"instance_id": instance_id, "count": len(reasons), "reasons": reasons[:3]},
            )

    def _newest_first(self, instance_id: str) -> Iterator[tuple[int, str]]:
        """(time, text) of the stream's events, newest first, a page at a time."""
        args: dict[str, Any] = {
            "logGroupName": node_log_group(self.cluster),
            "logStreamName": identity_stream(instance_id),
            "startFromHead": False,
        }
        while True:
            page = self._logs.get_log_events(**args)
            for event in reversed(page["events"]):
                yield event["timestamp"], event["message"]
            token = page.get("nextBackwardToken")
            if not page["events"] or token is None or token == args.get("nextToken"):
                return
            args["nextToken"] = token

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
            if is_transient(exc):
                raise retryable(exc, f"decrypting a registration of {instance_id}") from exc
            # A key of another account, one disabled or pending deletion, a blob that is no
            # ciphertext of this key: this registration is refused, with the reason.
            code = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
            raise OriginError(
                f"a registration does not decrypt as {instance_id}'s: {code}"
            ) from exc
        plaintext: bytes = answer["Plaintext"]
        return plaintext


def _time(checked: tuple[int, Registration]) -> int:
    return checked[0]


def _nothing_holds(instance_id: str, stream: _Stream) -> str:
    """Why no key of ``instance_id`` is known: its registrations refused, or unread."""
    refused = sorted({r for r in stream.checked.values() if isinstance(r, str)})
    why = [*refused[:REFUSALS_TOLD], *([stream.trouble] if stream.trouble else [])]
    if not why:
        return f"no registration of {instance_id} found"
    return f"no registration of {instance_id} holds: {'; '.join(why)}"
