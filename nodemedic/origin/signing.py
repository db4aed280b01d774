"""Signed lines: a per-boot HMAC key, registered with the instance identity document, and
a mark on every event that binds the event to the instance and the key.

The MAC covers the instance id, the event's timestamp and the whole text behind the mark
(the injected and previous-boot marks included), so a signed line cannot be moved to
another instance's stream, re-stamped, or stripped of a mark. HMAC-SHA256 is in the
standard library: the agent pays no import and no memory for it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from nodemedic.contracts.logs import SIGNATURE_MARK, split_signature
from nodemedic.origin.identity import OriginError, RsaCertificate, verified_document

KEY_BYTES = 32
MAC_BYTES = 16
"""128 bits of HMAC-SHA256: forging one line takes 2**128 guesses, each a PutLogEvents."""
SIGNATURE_BYTES = len(SIGNATURE_MARK.format(key_id="0" * 8, mac="A" * 22))
"""What the mark adds to every event (41 bytes)."""
REGISTRATION_SCHEMA = 1


def key_id(key: bytes) -> str:
    """A short public name of ``key`` (32 bits of a hash: it tells keys apart, no more)."""
    return hashlib.sha256(b"nodemedic-key-id\0" + key).hexdigest()[:8]


def mac(key: bytes, instance_id: str, timestamp_ms: int, text: str) -> str:
    message = f"{instance_id}\n{timestamp_ms}\n{text}".encode("utf-8", "surrogatepass")
    digest = hmac.new(key, message, hashlib.sha256).digest()[:MAC_BYTES]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def sign(key: bytes, instance_id: str, timestamp_ms: int, text: str) -> str:
    """``text`` as shipped by ``instance_id`` at ``timestamp_ms``: behind the signature mark."""
    return (
        SIGNATURE_MARK.format(key_id=key_id(key), mac=mac(key, instance_id, timestamp_ms, text))
        + text
    )


@dataclass(frozen=True)
class Registration:
    """What an agent registers at start (encrypted, see ``contracts.IDENTITY_STREAM``)."""

    instance_id: str
    boot_id: str
    key: bytes
    document: str
    """The instance identity document exactly as IMDS served it (its signature is over
    these bytes)."""
    signature: str

    @property
    def key_id(self) -> str:
        return key_id(self.key)

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema": REGISTRATION_SCHEMA,
                "instance_id": self.instance_id,
                "boot_id": self.boot_id,
                "key": base64.b64encode(self.key).decode("ascii"),
                "document": self.document,
                "signature": self.signature,
            }
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Registration:
        try:
            fields = json.loads(text)
            if not isinstance(fields, dict) or fields.get("schema") != REGISTRATION_SCHEMA:
                raise OriginError("not a registration of a known schema")
            values = [fields[k] for k in ("instance_id", "boot_id", "document", "signature")]
            key = base64.b64decode(fields["key"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise OriginError(f"not a registration: {exc!r}") from exc
        if not all(isinstance(v, str) for v in values) or len(key) != KEY_BYTES:
            raise OriginError("a registration field has the wrong type or size")
        instance_id, boot_id, document, signature = values
        return cls(instance_id, boot_id, key, document, signature)


def check_registration(
    registration: Registration,
    instance_id: str,
    certificates: Sequence[RsaCertificate],
    at: datetime,
) -> None:
    """OriginError unless ``registration`` is ``instance_id``'s: AWS signed its identity
    document, and the document names that instance."""
    if registration.instance_id != instance_id:
        raise OriginError(f"registration of {registration.instance_id}, not of {instance_id}")
    document = verified_document(registration.document, registration.signature, certificates, at)
    if document["instanceId"] != instance_id:
        raise OriginError(f"identity document of {document['instanceId']}, not of {instance_id}")


class OutOfBoot(OriginError):
    """The key is registered, but not for the boot that wrote a line at that time."""


@dataclass(frozen=True)
class BootWindow:
    """When a boot's key may have signed a line: a key is its boot's only. Lines after the
    next boot registered are not its boot's (the machine restarted since), nor lines before
    the previous boot registered (its boot had not begun). A boot's own kernel lines from
    before its agent registered stay its own: they are stamped after the previous boot's
    registration."""

    boot_id: str
    after_ms: int | None
    """When the previous boot registered first; None for the first boot known."""
    before_ms: int | None
    """When the next boot registered first; None for the newest boot known."""
    next_boot: str = ""

    def refusal(self, key: str, written_ms: int) -> str | None:
        """Why a line written at ``written_ms`` is not this boot's, or None when it may be."""
        if self.before_ms is not None and written_ms >= self.before_ms:
            return (
                f"key {key} is of boot {self.boot_id}, and boot {self.next_boot} registered "
                "before the line was written"
            )
        if self.after_ms is not None and written_ms < self.after_ms:
            return f"key {key} is of boot {self.boot_id}, which began after the line was written"
        return None


def boot_windows(boots: Sequence[tuple[int, str]]) -> dict[str, BootWindow]:
    """The window of each boot, by boot id, from one instance's (time its key was first
    registered, boot id) of every boot that holds a key (one key a boot: the first)."""
    ordered = sorted(boots)
    windows = {}
    for index, (_, boot_id) in enumerate(ordered):
        after = ordered[index + 1] if index + 1 < len(ordered) else None
        windows[boot_id] = BootWindow(
            boot_id,
            after_ms=ordered[index - 1][0] if index else None,
            before_ms=after[0] if after else None,
            next_boot=after[1] if after else "",
        )
    return windows


class Registrations(Protocol):
    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        """The checked registration of ``key_id`` by ``instance_id``, if there is one, for a
        line written at ``written_ms``; OutOfBoot when that key's boot did not write lines
        then; OriginError when the instance's keys cannot be known (no registration of it
        holds, they cannot be read, or no certificate can check them). ``fresh``: the
        registrations known must be as new as the line (a later boot's may end the key's),
        at the cost of a read."""
        ...


@dataclass(frozen=True)
class Unproven:
    """Why a line is not proven to come from its instance."""

    reason: str
    forged: bool
    """A signature is there and does not hold: a key its instance did not register while
    others of that instance are known, or a MAC that does not match. False: the origin could
    not be checked at all (the line is unsigned, or the instance's keys are unknowable):
    the agent cannot sign, or the pipeline cannot check, and every fault of the node is
    capped until someone looks."""


@dataclass(frozen=True)
class Proven:
    """A line's signature holds against its instance's key of boot ``boot_id``: the boot
    that wrote it, as far as the key can tell (a gate compares it with the node's boot)."""

    boot_id: str


def proof(
    registrations: Registrations,
    instance_id: str,
    timestamp_ms: int,
    message: str,
    *,
    fresh: bool = False,
) -> Unproven | Proven:
    """Whether ``message`` (an event of ``instance_id``'s stream) is proven to come from
    that instance: its signature checks out against the key of the boot that wrote it then
    (``fresh``: see ``Registrations.find``)."""
    signature, text = split_signature(message)
    if signature is None:
        return Unproven("unsigned", forged=False)
    found_id, found_mac = signature
    try:
        registration = registrations.find(instance_id, found_id, timestamp_ms, fresh=fresh)
    except OutOfBoot as exc:
        return Unproven(str(exc), forged=True)
    except OriginError as exc:
        return Unproven(f"key {found_id} cannot be checked: {exc}", forged=False)
    if registration is None:
        return Unproven(f"key {found_id} is not registered by {instance_id}", forged=True)
    if not hmac.compare_digest(found_mac, mac(registration.key, instance_id, timestamp_ms, text)):
        return Unproven(f"signature does not match key {found_id}", forged=True)
    return Proven(registration.boot_id)


def unproven(
    registrations: Registrations,
    instance_id: str,
    timestamp_ms: int,
    message: str,
    *,
    fresh: bool = False,
) -> Unproven | None:
    """Why ``message`` is not proven to come from ``instance_id`` (``proof``), or None."""
    found = proof(registrations, instance_id, timestamp_ms, message, fresh=fresh)
    return found if isinstance(found, Unproven) else None
