"""The EC2 instance identity document and AWS's signature over it.

IMDSv2 serves ``dynamic/instance-identity/document`` (JSON: instanceId, region, accountId,
...) and ``dynamic/instance-identity/signature``: base64 of an RSA PKCS#1 v1.5 signature
over SHA-256 of the document, by AWS's key for the Region (its certificate is published,
"AWS public certificates for instance identity document signatures", the RSA one). Only
the instance can read its own document from IMDS, which is what lets a registration carry
it as the instance's word.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from nodemedic.origin.der import DerError, RsaCertificate, pem_certificates, read_certificate

VENDORED = Path(__file__).with_name("certificates")
"""AWS's RSA certificates by Region, ``<region>.pem``, with their source in SOURCE.md."""
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
_ASCII_WHITESPACE = {ord(c): None for c in " \t\n\r\f\v"}


class OriginError(ValueError):
    """Evidence of origin that does not hold; the message says why."""


def load_certificates(pem_text: str) -> tuple[RsaCertificate, ...]:
    """The RSA certificates in ``pem_text``; OriginError when there is none or one is bad."""
    try:
        found = tuple(read_certificate(der) for der in pem_certificates(pem_text))
    except DerError as exc:
        raise OriginError(f"unreadable certificate: {exc}") from exc
    if not found:
        raise OriginError("no PEM certificate found")
    return found


def vendored_regions() -> frozenset[str]:
    """The Regions whose certificate is vendored."""
    return frozenset(path.stem for path in VENDORED.glob("*.pem"))


@cache
def vendored_certificates(region: str) -> tuple[RsaCertificate, ...]:
    """AWS's certificate for ``region``; none where it is not vendored. Only the Region's
    own: each certificate was copied from its own source (SOURCE.md), and one that came
    wrong must not let its key holder sign documents for every other Region too."""
    if region not in vendored_regions():
        return ()
    return load_certificates((VENDORED / f"{region}.pem").read_text("ascii"))


def rsa_sha256_valid(certificate: RsaCertificate, message: bytes, signature: bytes) -> bool:
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 8.2.2): the encoded block is rebuilt and
    compared whole, so no parsing of attacker-chosen padding is involved."""
    size = (certificate.modulus.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    number = int.from_bytes(signature, "big")
    if number >= certificate.modulus:
        return False
    block = pow(number, certificate.exponent, certificate.modulus).to_bytes(size, "big")
    digest = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    if size < len(digest) + 11:
        return False
    expected = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return hmac.compare_digest(block, expected)


def verified_document(
    document: str, signature: str, certificates: Sequence[RsaCertificate], at: datetime
) -> dict[str, Any]:
    """The fields of ``document`` once AWS's ``signature`` over it checks out against one of
    ``certificates`` valid at ``at``; OriginError otherwise. IMDS serves the signature
    wrapped at 76 columns: ASCII whitespace is dropped, any other character not base64
    refuses it."""
    try:
        raw = base64.b64decode(signature.translate(_ASCII_WHITESPACE), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OriginError("the document's signature is not base64") from exc
    current = [c for c in certificates if c.not_before <= at <= c.not_after]
    if not current:
        raise OriginError(f"no identity certificate is valid at {at:%Y-%m-%dT%H:%M:%SZ}")
    if not any(rsa_sha256_valid(c, document.encode(), raw) for c in current):
        raise OriginError("the identity document's signature does not match any certificate")
    try:
        fields = json.loads(document)
    except ValueError as exc:
        raise OriginError("the identity document is not JSON") from exc
    if not isinstance(fields, dict) or not isinstance(fields.get("instanceId"), str):
        raise OriginError("the identity document names no instance")
    return fields
