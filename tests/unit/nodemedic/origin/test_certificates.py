"""AWS's identity certificates: one for every Region nodemedic may run in, each trusted for
its own Region only, and real identity documents verified with them as IMDS serves them."""

from __future__ import annotations

import json
import re
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
from nodemedic.settings import parse_cluster
from stacks.ingest import identity_certificates
from tests.support.paths import EVENTS, ROOT

SECURITY = ROOT / "docs" / "security.md"
_ROW = re.compile(
    r"^\| `(?P<partition>[a-z-]+)` \| (?P<regions>\d+) \| (?P<vendored>\d+) \| (?P<gaps>.+) \|$"
)
IDENTITY = EVENTS / "identity"
AT = datetime(2026, 2, 17, tzinfo=UTC)
"""When every recorded document's certificate is valid."""
DOCUMENTS = {"iid0": "us-east-1", "iid1": "us-east-1", "apse2": "ap-southeast-2"}


def coverage_table() -> dict[str, tuple[int, int, frozenset[str]]]:
    """docs/security.md's coverage per partition: (EC2 Regions, with a certificate, the
    Regions without one)."""
    found = {}
    for line in SECURITY.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row is not None:
            gaps = frozenset(re.findall(r"`([a-z0-9-]+)`", row["gaps"]))
            found[row["partition"]] = (int(row["regions"]), int(row["vendored"]), gaps)
    return found


def ec2_regions(partition: str) -> set[str]:
    return set(botocore.session.Session().get_available_regions("ec2", partition_name=partition))


def test_the_coverage_per_partition_in_the_docs_is_botocores_regions_and_the_files() -> None:
    """Every partition botocore knows is in the table, and each row says which of its EC2
    Regions have a certificate and which have none, as the vendored files are."""
    table = coverage_table()
    assert set(table) == set(botocore.session.Session().get_available_partitions())
    for partition, (count, vendored, gaps) in table.items():
        regions = ec2_regions(partition)
        assert (count, vendored, gaps) == (
            len(regions),
            len(regions & vendored_regions()),
            frozenset(regions - vendored_regions()),
        ), partition
    everywhere = set().union(*(ec2_regions(p) for p in table))
    assert vendored_regions() <= everywhere, "a certificate of no Region: a misnamed file?"


@pytest.mark.parametrize("region", ["ap-southeast-6", "eusc-de-east-1", "us-iso-east-1"])
def test_a_stack_of_a_region_without_a_certificate_is_refused_unless_it_lists_one(
    region: str,
) -> None:
    """Where the origin is enforced: every fault there would only be notified."""
    settings = parse_cluster({"name": "c", "node_groups": ["g"]})
    with pytest.raises(ValueError, match=f"no AWS identity certificate of {region}"):
        identity_certificates(settings, region)
    audit = parse_cluster({"name": "c", "proof_of_origin": "audit"})
    assert identity_certificates(audit, region) == ""


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
