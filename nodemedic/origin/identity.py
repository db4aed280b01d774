"""The EC2 instance identity document and AWS's signature over it.

IMDSv2 serves ``dynamic/instance-identity/document`` (JSON: instanceId, region, accountId,
...) and ``dynamic/instance-identity/signature``: base64 of an RSA PKCS#1 v1.5 signature
over SHA-256 of the document, by AWS's key for the Region (its certificate is published,
"AWS public certificates for instance identity document signatures", the RSA one). Only
the instance can read its own document from IMDS, which is what lets a registration carry
it as the instance's word.

The certificate is a trust anchor the operator configures, so its own signature is not
checked: only its RSA key and its dates are used. ``cryptography`` reads the certificate
and checks the signature, imported where a certificate is first read: the agent (which
only signs, ``signing``) does not have it, and the classify Lambda's cold start does not
pay for it (about 45 ms) before its first registration.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa

VENDORED = Path(__file__).with_name("certificates")
"""AWS's RSA certificates by Region, ``<region>.pem``, with their source in SOURCE.md."""
_ASCII_WHITESPACE = {ord(c): None for c in " \t\n\r\f\v"}
_PEM_BEGIN = "-----BEGIN CERTIFICATE-----"


class OriginError(ValueError):
    """Evidence of origin that does not hold; the message says why."""


@dataclass(frozen=True)
class RsaCertificate:
    """What a trust anchor contributes: its RSA key and when it is valid."""

    key: rsa.RSAPublicKey
    not_before: datetime
    not_after: datetime

    @property
    def modulus(self) -> int:
        return self.key.public_numbers().n

    @property
    def exponent(self) -> int:
        return self.key.public_numbers().e


def _rsa_certificate(certificate: x509.Certificate) -> RsaCertificate:
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = certificate.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise OriginError("unreadable certificate: not an RSA key")
    return RsaCertificate(key, certificate.not_valid_before_utc, certificate.not_valid_after_utc)


def load_certificates(pem_text: str) -> tuple[RsaCertificate, ...]:
    """The RSA certificates in ``pem_text``; OriginError when there is none or one is bad."""
    if _PEM_BEGIN not in pem_text:
        raise OriginError("no PEM certificate found")
    from cryptography import x509

    try:
        found = x509.load_pem_x509_certificates(pem_text.encode("ascii"))
    except (ValueError, UnicodeEncodeError) as exc:
        raise OriginError(f"unreadable certificate: {exc}") from exc
    return tuple(_rsa_certificate(certificate) for certificate in found)


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
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 8.2.2)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        certificate.key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


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
