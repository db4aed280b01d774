"""Just enough DER to read an RSA public key and its validity out of an X.509 certificate.

The classify Lambda verifies one RSA signature per registration; the ``cryptography``
wheel (native code, several MB) would be bundled for that alone. The certificate is a
trust anchor the operator configures, so its own signature is not checked: only the key
and the dates are read, and anything unexpected is refused.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_SEQUENCE, _INTEGER, _BIT_STRING, _OID = 0x30, 0x02, 0x03, 0x06
_UTC_TIME, _GENERALIZED_TIME, _VERSION = 0x17, 0x18, 0xA0
_RSA_ENCRYPTION = bytes.fromhex("2a864886f70d010101")
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL)


class DerError(ValueError):
    """Not a certificate this module can read."""


@dataclass(frozen=True)
class RsaCertificate:
    modulus: int
    exponent: int
    not_before: datetime
    not_after: datetime


def _element(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the element at ``at``."""
    if at + 2 > len(data):
        raise DerError("truncated element")
    tag, length = data[at], data[at + 1]
    start = at + 2
    if length & 0x80:
        size = length & 0x7F
        if not 0 < size <= 4 or start + size > len(data):
            raise DerError("bad length")
        length = int.from_bytes(data[start : start + size], "big")
        start += size
    if start + length > len(data):
        raise DerError("truncated element")
    return tag, start, start + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    found = []
    while start < end:
        element = _element(data[:end], start)
        found.append(element)
        start = element[2]
    return found


def _expect(element: tuple[int, int, int], tag: int) -> tuple[int, int, int]:
    if element[0] != tag:
        raise DerError(f"expected tag {tag:#x}, found {element[0]:#x}")
    return element


def _time(data: bytes, element: tuple[int, int, int]) -> datetime:
    tag, start, end = element
    text = data[start:end].decode("ascii", "replace")
    formats = {_UTC_TIME: "%y%m%d%H%M%SZ", _GENERALIZED_TIME: "%Y%m%d%H%M%SZ"}
    if tag not in formats:
        raise DerError("validity is not a time")
    try:
        return datetime.strptime(text, formats[tag]).replace(tzinfo=UTC)
    except ValueError as exc:
        raise DerError(f"bad time {text!r}") from exc


def read_certificate(der: bytes) -> RsaCertificate:
    """The RSA key and validity of a DER certificate; DerError for anything else."""
    _, start, end = _expect(_element(der, 0), _SEQUENCE)
    tbs = _expect(_children(der, start, end)[0], _SEQUENCE)
    fields = _children(der, tbs[1], tbs[2])
    if fields and fields[0][0] == _VERSION:
        fields = fields[1:]
    if len(fields) < 6:
        raise DerError("too few certificate fields")
    validity = _children(der, *_expect(fields[3], _SEQUENCE)[1:])
    key_info = _children(der, *_expect(fields[5], _SEQUENCE)[1:])
    if len(validity) != 2 or len(key_info) != 2:
        raise DerError("bad validity or key info")
    algorithm = _children(der, *_expect(key_info[0], _SEQUENCE)[1:])
    oid = _expect(algorithm[0], _OID)
    if der[oid[1] : oid[2]] != _RSA_ENCRYPTION:
        raise DerError("not an RSA key")
    _, bits_start, bits_end = _expect(key_info[1], _BIT_STRING)
    if der[bits_start : bits_start + 1] != b"\x00":
        raise DerError("bad key bit string")
    key = _expect(_element(der[:bits_end], bits_start + 1), _SEQUENCE)
    numbers = [_expect(c, _INTEGER) for c in _children(der, key[1], key[2])]
    if len(numbers) != 2:
        raise DerError("an RSA key is a modulus and an exponent")
    modulus, exponent = (int.from_bytes(der[s:e], "big") for _, s, e in numbers)
    return RsaCertificate(modulus, exponent, _time(der, validity[0]), _time(der, validity[1]))


def pem_certificates(text: str) -> list[bytes]:
    """The DER bytes of every PEM certificate in ``text``."""
    try:
        return [
            base64.b64decode("".join(body.split()), validate=True) for body in _PEM.findall(text)
        ]
    except (binascii.Error, ValueError) as exc:
        raise DerError(f"bad PEM: {exc}") from exc
