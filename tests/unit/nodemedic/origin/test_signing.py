"""Signed lines and registrations: what proves a line came from its instance, and what
an attacker holding the shared agent credential can forge, move or replay."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from nodemedic.origin.identity import (
    OriginError,
    load_certificates,
    vendored_certificates,
    verified_document,
)
from nodemedic.origin.signing import (
    KEY_BYTES,
    SIGNATURE_BYTES,
    Registration,
    Unproven,
    check_registration,
    sign,
    unproven,
)
from world.aws.identity import LocalAuthority, identity_document, local_authority

VICTIM, ATTACKER = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"
XID = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
NOW = datetime.now(UTC)
AUTHORITY = local_authority()
CERTIFICATES = load_certificates(AUTHORITY.certificate_pem)


def registration(
    instance_id: str, key: bytes, boot_id: str = "boot-1", authority: LocalAuthority = AUTHORITY
) -> Registration:
    document = identity_document(instance_id, "us-east-1")
    return Registration(instance_id, boot_id, key, document, authority.sign(document))


class Known:
    """The classifier's view: the registrations that were checked, by instance."""

    def __init__(self, *registrations: Registration) -> None:
        self.by_instance: dict[str, list[Registration]] = {}
        for r in registrations:
            check_registration(r, r.instance_id, CERTIFICATES, NOW)
            self.by_instance.setdefault(r.instance_id, []).append(r)

    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        found = [r for r in self.by_instance.get(instance_id, []) if r.key_id == key_id]
        return found[0] if found else None


VICTIM_KEY, ATTACKER_KEY = b"v" * KEY_BYTES, b"a" * KEY_BYTES
KNOWN = Known(registration(VICTIM, VICTIM_KEY), registration(ATTACKER, ATTACKER_KEY))


def test_a_line_signed_with_the_instances_registered_key_is_proven() -> None:
    line = sign(VICTIM_KEY, VICTIM, 1_700_000_000_000, XID)
    assert len(line) - len(XID) == SIGNATURE_BYTES == 41
    assert unproven(KNOWN, VICTIM, 1_700_000_000_000, line) is None


def test_an_unsigned_line_is_not_proven() -> None:
    assert unproven(KNOWN, VICTIM, 1_700_000_000_000, XID) == Unproven("unsigned", forged=False)


def test_a_tampered_line_restamped_line_or_stripped_mark_is_not_proven() -> None:
    line = sign(VICTIM_KEY, VICTIM, 1_700_000_000_000, "[injected facility=1] " + XID)
    head, _, _ = line.partition("[injected")
    stripped = head + XID
    tampered = line.replace(": 79,", ": 48,")
    for text, ts in ((tampered, 1_700_000_000_000), (stripped, 1_700_000_000_000), (line, 1)):
        why = unproven(KNOWN, VICTIM, ts, text)
        assert why == Unproven(f"signature does not match key {line[8:16]}", forged=True)


def test_a_line_moved_to_another_instances_stream_is_not_proven() -> None:
    """The attacker signs with its own node's registered key and writes into the victim's
    stream: the key is not the victim's."""
    line = sign(ATTACKER_KEY, ATTACKER, 1_700_000_000_000, XID)
    assert unproven(KNOWN, ATTACKER, 1_700_000_000_000, line) is None
    why = unproven(KNOWN, VICTIM, 1_700_000_000_000, line)
    assert why is not None and why.forged and "is not registered by " + VICTIM in why.reason
    assert unproven(KNOWN, VICTIM, 1_700_000_000_000, sign(ATTACKER_KEY, VICTIM, 1, XID))


def test_a_registration_is_refused_for_another_instance_or_a_document_of_another() -> None:
    with pytest.raises(OriginError, match="registration of"):
        check_registration(registration(ATTACKER, ATTACKER_KEY), VICTIM, CERTIFICATES, NOW)
    theirs = registration(ATTACKER, ATTACKER_KEY)
    claimed = replace(theirs, instance_id=VICTIM)
    with pytest.raises(OriginError, match="identity document of " + ATTACKER):
        check_registration(claimed, VICTIM, CERTIFICATES, NOW)


def test_a_document_signed_by_another_authority_is_refused() -> None:
    """An attacker's own "AWS" key, or AWS's real certificate for a test document."""
    forged = registration(VICTIM, VICTIM_KEY, authority=local_authority())
    with pytest.raises(OriginError, match="does not match any certificate"):
        check_registration(forged, VICTIM, CERTIFICATES, NOW)
    with pytest.raises(OriginError, match="does not match any certificate"):
        aws = vendored_certificates("us-east-1")
        check_registration(registration(VICTIM, VICTIM_KEY), VICTIM, aws, NOW)


def test_an_expired_certificate_a_garbage_document_or_signature_is_refused() -> None:
    old = local_authority(NOW - timedelta(days=20), timedelta(days=10))
    expired = registration(VICTIM, VICTIM_KEY, authority=old)
    with pytest.raises(OriginError, match="no identity certificate is valid"):
        check_registration(expired, VICTIM, load_certificates(old.certificate_pem), NOW)
    good = registration(VICTIM, VICTIM_KEY)
    edited = good.document.replace(VICTIM, ATTACKER)
    cases = [
        (edited, good.signature, "does not match"),
        (good.document, "not base64!", "not base64"),
        (good.document, base64.b64encode(b"\0" * 256).decode(), "does not match"),
        ("[]", AUTHORITY.sign("[]"), "names no instance"),
        ("{", AUTHORITY.sign("{"), "not JSON"),
    ]
    for document, signature, why in cases:
        with pytest.raises(OriginError, match=why):
            verified_document(document, signature, CERTIFICATES, NOW)


def test_garbage_registrations_and_certificates_are_refused_with_a_reason() -> None:
    for text in ("", "[]", json.dumps({"schema": 1}), json.dumps({"schema": 2})):
        with pytest.raises(OriginError):
            Registration.from_json(text)
    for pem in ("", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"):
        with pytest.raises(OriginError):
            load_certificates(pem)
    good = registration(VICTIM, VICTIM_KEY)
    assert Registration.from_json(good.to_json()) == good


def test_the_vendored_aws_certificate_is_the_published_rsa_one() -> None:
    (us_east_1,) = vendored_certificates("us-east-1")
    assert us_east_1.modulus.bit_length() == 1024 and us_east_1.exponent == 65537
    assert us_east_1.not_after == datetime(2029, 4, 28, 17, 34, 1, tzinfo=UTC)
