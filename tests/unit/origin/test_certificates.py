"""AWS's identity certificates: one for every Region nodemedic may run in, each trusted for
its own Region only, and real identity documents verified with them as IMDS serves them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import botocore.session
import pytest

from nodemedic.origin.identity import (
    VENDORED,
    OriginError,
    vendored_certificates,
    vendored_regions,
    verified_document,
)
from nodemedic.origin.signing import KEY_BYTES, Registration, check_registration
from tests.support.paths import EVENTS

PARTITIONS = ("aws", "aws-us-gov", "aws-cn")
KNOWN_GAPS = frozenset({"ap-southeast-6"})
"""Regions whose RSA certificate nodemedic does not have. ap-southeast-6 (Asia Pacific (New
Zealand)): in none of the copies of AWS's page the certificates were taken from (SOURCE.md);
a cluster there lists it in ``identity_certificates``. Vendor it, and this test says to take
it off this list."""
IDENTITY = EVENTS / "identity"
AT = datetime(2026, 2, 17, tzinfo=UTC)
"""When every recorded document's certificate is valid."""
DOCUMENTS = {"iid0": "us-east-1", "iid1": "us-east-1", "apse2": "ap-southeast-2"}


def ec2_regions() -> set[str]:
    session = botocore.session.Session()
    return {
        region
        for partition in PARTITIONS
        for region in session.get_available_regions("ec2", partition_name=partition)
    }


def test_every_region_botocore_knows_has_a_certificate_but_the_known_gaps() -> None:
    regions = ec2_regions()
    assert regions - vendored_regions() == KNOWN_GAPS
    assert vendored_regions() <= regions, "a certificate of no Region: a misnamed file?"


def test_every_vendored_certificate_is_an_aws_rsa_key_with_its_source_noted() -> None:
    sources = (VENDORED / "SOURCE.md").read_text(encoding="utf-8")
    for region in vendored_regions():
        (certificate,) = vendored_certificates(region)
        assert certificate.modulus.bit_length() == 1024 and certificate.exponent == 65537
        assert f"| `{region}.pem` |" in sources, region
    assert "ap-east-2.pem" in sources.split("**Single-sourced:**")[1].split("\n\n")[0]
    assert vendored_certificates("ap-southeast-6") == ()


def recorded(name: str) -> tuple[str, str]:
    """A real identity document and its signature, exactly as IMDS served them."""
    document = (IDENTITY / f"{name}.json").read_text(encoding="ascii")
    return document, (IDENTITY / f"{name}.sig").read_text(encoding="ascii")


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_real_document_verifies_with_its_signature_wrapped_as_imds_serves_it(
    name: str,
) -> None:
    """IMDS wraps the base64 signature at 76 columns; decoding it whole refused it."""
    document, signature = recorded(name)
    region = DOCUMENTS[name]
    fields = verified_document(document, signature, vendored_certificates(region), AT)
    assert fields["region"] == region
    registration = Registration(fields["instanceId"], "boot-1", b"k" * KEY_BYTES, *recorded(name))
    check_registration(registration, fields["instanceId"], vendored_certificates(region), AT)


def test_the_wrapped_signatures_are_wrapped_and_only_whitespace_is_dropped() -> None:
    document, signature = recorded("iid0")
    assert "\n" in signature.strip()
    for bad in (signature.replace("\n", "!", 1), signature.replace("\n", "\u00a0", 1)):
        with pytest.raises(OriginError, match="not base64"):
            verified_document(document, bad, vendored_certificates("us-east-1"), AT)
    edited = document.replace("t2.micro", "p5.48xlarge")
    with pytest.raises(OriginError, match="does not match"):
        verified_document(edited, signature, vendored_certificates("us-east-1"), AT)


def test_a_certificate_is_trusted_for_its_own_region_only() -> None:
    """ap-east-1 has a key of its own: its certificate does not verify a us-east-1
    document (a certificate that came wrong can harm its own Region only)."""
    document, signature = recorded("iid0")
    assert json.loads(document)["region"] == "us-east-1"
    with pytest.raises(OriginError, match="does not match any certificate"):
        verified_document(document, signature, vendored_certificates("ap-east-1"), AT)
