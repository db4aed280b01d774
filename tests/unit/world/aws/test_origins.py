"""A node without an agent process registers and signs as its agent would: the classifier's
checks accept its registration as the instance's, and its lines as signed by the key the
registration carries, and as no other instance's."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    identity_stream,
    kmsg_stream,
    origin_key_alias,
    parse_registration,
    split_signature,
)
from nodemedic.origin.identity import OriginError, load_certificates
from nodemedic.origin.signing import Registration, check_registration, key_id, mac
from world.aws.identity import MetadataService, local_authority
from world.aws.origins import kms_encrypt, node_identity

CLUSTER, INSTANCE, OTHER = "demo", "i-0a1b2c3d4e5f60718", "i-0ffffffffffffff01"
AUTHORITY = local_authority()


@pytest.fixture
def kms() -> Iterator[object]:
    with mock_aws():
        client = boto3.client("kms", region_name="us-east-1")
        key = client.create_key()["KeyMetadata"]["KeyId"]
        client.create_alias(AliasName=origin_key_alias(CLUSTER), TargetKeyId=key)
        yield client


class BusyMetadataService(MetadataService):
    """The world's IMDS while the world's process is busy: its answer comes after the
    agent's 2 s read timeout."""

    def answer(self, path: str) -> str | None:
        if path.endswith("/document"):
            time.sleep(2.5)
        return super().answer(path)


@pytest.fixture
def metadata() -> Iterator[MetadataService]:
    service = MetadataService(AUTHORITY, "us-east-1")
    yield service
    service.close()


def opened(kms: object, sealed: str, instance_id: str) -> Registration:
    """The registration as the classifier opens it: bound to its instance."""
    answer = kms.decrypt(  # type: ignore[attr-defined]
        CiphertextBlob=base64.b64decode(sealed),
        EncryptionContext={ORIGIN_CONTEXT_CLUSTER: CLUSTER, ORIGIN_CONTEXT_INSTANCE: instance_id},
    )
    return Registration.from_json(answer["Plaintext"])


def test_a_node_registers_first_in_its_kmsg_stream_and_in_its_identity_stream(
    kms: object, metadata: MetadataService
) -> None:
    node = node_identity(INSTANCE, "boot-1", CLUSTER, metadata.endpoint, kms_encrypt(kms))
    streams = [stream for stream, _ in node.registration]
    assert streams == [kmsg_stream(INSTANCE), identity_stream(INSTANCE)]
    (_, line), (_, sealed) = (events[0] for _, events in node.registration)
    assert parse_registration(line) == sealed
    registration = opened(kms, sealed, INSTANCE)
    assert registration.key == node.key and registration.boot_id == "boot-1"
    certificates = load_certificates(AUTHORITY.certificate_pem)
    check_registration(registration, INSTANCE, certificates, datetime.now(UTC))
    with pytest.raises(OriginError):
        check_registration(registration, OTHER, certificates, datetime.now(UTC))


def test_a_nodes_lines_carry_the_mark_of_its_registered_key_for_that_instance_only(
    kms: object, metadata: MetadataService
) -> None:
    node = node_identity(INSTANCE, "boot-1", CLUSTER, metadata.endpoint, kms_encrypt(kms))
    text = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    mark, behind = split_signature(node.signed(text, 1_000))
    assert behind == text and mark == (key_id(node.key), mac(node.key, INSTANCE, 1_000, text))
    assert mark[1] != mac(node.key, OTHER, 1_000, text)
    assert mark[1] != mac(node.key, INSTANCE, 2_000, text)


def test_a_node_registers_when_the_worlds_metadata_service_answers_slowly(
    kms: object,
) -> None:
    metadata = BusyMetadataService(AUTHORITY, "us-east-1")
    try:
        node = node_identity(INSTANCE, "boot-1", CLUSTER, metadata.endpoint, kms_encrypt(kms))
    finally:
        metadata.close()
    (_, sealed) = node.registration[1][1][0]
    assert opened(kms, sealed, INSTANCE).key == node.key
