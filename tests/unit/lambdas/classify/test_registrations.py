"""The classifier's registry of agent keys against what anyone holding the agents' shared
credential can write into a node's streams (any number of events, before or after the
genuine registration), and against what KMS, DynamoDB and CloudWatch Logs may answer: the
work stays bounded per batch and per node, and AWS away refuses only that node's lines."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws

from lambdas.classify.kept import KeptTable
from lambdas.classify.origin import LEARN_DECRYPTS, READ_DECRYPTS, READ_INTERVAL, LogsRegistrations
from nodemedic.contracts.logs import identity_stream, registration_message
from nodemedic.origin.identity import OriginError, load_certificates
from nodemedic.origin.signing import KEY_BYTES, Registration, sign, unproven
from nodemedic.remediate.batch import LogEvent
from tests.support.classify import LEDGER, REGION
from tests.support.tables import create_ledger_table
from world.aws.identity import identity_document, local_authority

CLUSTER, VICTIM, OTHER = "trn-prod", "i-0a1b2c3d4e5f60718", "i-0b1b2c3d4e5f60719"
AUTHORITY = local_authority()
CERTIFICATES = load_certificates(AUTHORITY.certificate_pem)
WRITTEN = 1_763_836_200_000
"""When ``Logs`` stamps its first event (each later one a millisecond after)."""
XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": ""}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Call",
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Logs:
    """GetLogEvents over the identity streams, newest first, as CloudWatch pages them."""

    def __init__(self, region: str = REGION) -> None:
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.reads: list[str] = []
        self.error: Exception | None = None
        self.meta = type("Meta", (), {"region_name": region})()

    def put(self, instance_id: str, message: str) -> int:
        events = self.events.setdefault(identity_stream(instance_id), [])
        at = WRITTEN + sum(len(e) for e in self.events.values())
        events.append({"timestamp": at, "message": message})
        return at

    def get_log_events(self, **args: Any) -> dict[str, Any]:
        self.reads.append(args["logStreamName"])
        if self.error is not None:
            raise self.error
        if args["logStreamName"] not in self.events or args["startFromHead"]:
            raise client_error("ResourceNotFoundException")
        return {"events": self.events[args["logStreamName"]][-args.get("limit", 10_000) :]}


class Kms:
    """Decrypt of the blobs it sealed; any other blob is refused as AWS refuses it."""

    def __init__(self) -> None:
        self.sealed: dict[bytes, bytes] = {}
        self.decrypts = 0
        self.error: Exception | None = None

    def seal(self, plaintext: bytes) -> str:
        blob = secrets.token_bytes(32)
        self.sealed[blob] = plaintext
        return base64.b64encode(blob).decode("ascii")

    def decrypt(self, CiphertextBlob: bytes, EncryptionContext: dict[str, str]) -> dict[str, Any]:
        self.decrypts += 1
        if self.error is not None:
            raise self.error
        if CiphertextBlob not in self.sealed:
            raise client_error("InvalidCiphertextException")
        return {"Plaintext": self.sealed[CiphertextBlob]}


class Dynamo:
    """The ledger's client, counting Queries; ``error`` answers every call."""

    def __init__(self) -> None:
        self.client = boto3.client("dynamodb")
        self.queries = 0
        self.error: Exception | None = None

    def query(self, **args: Any) -> Any:
        self.queries += 1
        if self.error is not None:
            raise self.error
        return self.client.query(**args)

    def update_item(self, **args: Any) -> Any:
        if self.error is not None:
            raise self.error
        return self.client.update_item(**args)


class World:
    def __init__(self) -> None:
        self.clock = Clock()
        self.logs = Logs()
        self.kms = Kms()
        self.dynamo = Dynamo()
        self.registry = self.container()

    def container(self) -> LogsRegistrations:
        """A classifier container that starts cold: it knows nothing but the ledger."""
        table = KeptTable(LEDGER, self.dynamo)
        return LogsRegistrations(
            CLUSTER, CERTIFICATES, self.logs, self.kms, self.clock, table=table
        )

    def sealed(self, boot: str = "boot-1", key: bytes | None = None) -> tuple[bytes, str]:
        key = key or secrets.token_bytes(KEY_BYTES)
        document = identity_document(VICTIM, REGION)
        registration = Registration(VICTIM, boot, key, document, AUTHORITY.sign(document))
        return key, self.kms.seal(registration.to_json().encode())

    def register(
        self, boot: str = "boot-1", key: bytes | None = None, container: Any = None
    ) -> bytes:
        """What the agent does at start: the registration in the identity stream, and first
        in the kmsg stream, whose batch ``container`` (this world's by default) classifies."""
        key, sealed = self.sealed(boot, key)
        at = self.logs.put(VICTIM, sealed)
        self.batch([registration_message(sealed)], at, container or self.registry)
        return key

    def batch(self, messages: list[str], at: int, container: LogsRegistrations) -> list[LogEvent]:
        container.begin()
        events = [LogEvent(str(i), at, message) for i, message in enumerate(messages)]
        return container.learn(VICTIM, events)

    def junk_registrations(self, count: int) -> None:
        """Sealed-looking registration lines in the victim's kmsg stream, in batches."""
        for start in range(0, count, 1000):
            lines = [registration_message(_junk()) for _ in range(min(1000, count - start))]
            assert self.batch(lines, WRITTEN + 10_000, self.registry) == []

    def proves(self, key: bytes, at: int = WRITTEN + 5, container: Any = None) -> bool:
        return self.why(key, at, container) is None

    def why(self, key: bytes, at: int, container: Any = None, *, fresh: bool = False) -> Any:
        registry = container or self.registry
        registry.begin()
        return unproven(registry, VICTIM, at, sign(key, VICTIM, at, XID79), fresh=fresh)


def _junk() -> str:
    return base64.b64encode(secrets.token_bytes(200)).decode("ascii")


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        create_ledger_table(LEDGER)
        yield World()


def test_ten_thousand_junk_events_newer_than_the_registration_do_not_hide_the_key(
    world: World,
) -> None:
    key = world.register()
    for _ in range(10_000):
        world.logs.put(VICTIM, _junk())
    world.junk_registrations(10_000)
    assert world.kms.decrypts <= 1 + 10 * LEARN_DECRYPTS, "bounded by batch"
    assert world.proves(key)

    world.kms.decrypts = 0
    cold = world.container()
    assert world.proves(key, container=cold)
    assert world.kms.decrypts == 1, "the kept registration alone, decrypted once"
    assert world.logs.reads == [] and world.dynamo.queries == 1


def test_a_batch_of_junk_registration_lines_costs_at_most_its_bound(world: World) -> None:
    world.batch([registration_message(_junk()) for _ in range(10_000)], WRITTEN, world.registry)
    assert world.kms.decrypts == LEARN_DECRYPTS


def test_a_key_registered_just_after_a_read_proves_the_next_boots_deep_check_at_once(
    world: World,
) -> None:
    """A rebooted node's deep-check pass is signed with its new boot's key, and the
    container that classifies it may have looked for the node's keys seconds before: the
    registration another container kept is found at once, with no read of the stream."""
    old = world.register("boot-1")
    assert world.proves(old)
    assert not world.proves(secrets.token_bytes(KEY_BYTES))  # a read of the stream
    reads = len(world.logs.reads)
    new = world.register("boot-2", container=world.container())
    passed = WRITTEN + 60_000
    assert world.why(new, passed, fresh=True) is None
    assert len(world.logs.reads) == reads


def test_a_cold_container_reads_a_key_not_kept_at_most_once_per_node_per_interval(
    world: World,
) -> None:
    """An agent that ships no registration line (or whose line was lost) is found in its
    identity stream, by one read, which keeps what it proves for every other container."""
    key, sealed = world.sealed()
    world.logs.put(VICTIM, sealed)
    for _ in range(READ_DECRYPTS - 1):
        world.logs.put(VICTIM, _junk())
    assert world.proves(key)
    assert world.kms.decrypts == READ_DECRYPTS and len(world.logs.reads) == 1
    for _ in range(29):  # forged batches with fresh key ids, over a minute
        world.clock.now += 2
        assert not world.proves(secrets.token_bytes(KEY_BYTES))
    assert len(world.logs.reads) == 2, "one read per 30 s"
    world.kms.decrypts = 0
    assert world.proves(key, container=world.container())
    assert world.kms.decrypts == 1 and len(world.logs.reads) == 2


def test_a_key_registered_before_the_newest_events_is_not_read_for_the_junk(world: World) -> None:
    key, sealed = world.sealed()
    world.logs.put(VICTIM, sealed)
    for _ in range(10_000):
        world.logs.put(VICTIM, _junk())
    why = world.why(key, WRITTEN + 5)
    assert why is not None and not why.forged
    assert world.kms.decrypts == READ_DECRYPTS


@pytest.mark.parametrize(
    "error",
    [
        client_error("ThrottlingException"),
        client_error("ServiceUnavailableException", 503),
        EndpointConnectionError(endpoint_url="https://logs.us-east-1.amazonaws.com"),
    ],
    ids=["throttling", "unavailable", "unreachable"],
)
def test_a_throttled_read_refuses_only_that_nodes_unproven_lines(
    world: World, error: Exception
) -> None:
    key = world.register()
    world.logs.error = error
    why = world.why(secrets.token_bytes(KEY_BYTES), WRITTEN + 5)
    assert why is not None and not why.forged, "unverifiable, not retried"
    assert "identity stream cannot be read" in why.reason
    assert world.proves(key), "the node's kept key still proves"
    world.logs.error = None
    world.clock.now += READ_INTERVAL
    assert not world.proves(secrets.token_bytes(KEY_BYTES))


@pytest.mark.parametrize(
    "error", [client_error("ThrottlingException"), client_error("KMSInternalException", 500)]
)
def test_kms_away_leaves_the_key_unverifiable_and_it_is_proved_later(
    world: World, error: Exception
) -> None:
    world.kms.error = error
    key = world.register()
    why = world.why(key, WRITTEN + 5)
    assert why is not None and not why.forged and "KMS cannot decrypt now" in why.reason
    world.kms.error = None
    world.clock.now += READ_INTERVAL
    assert world.proves(key)


def test_the_ledger_throttled_leaves_the_lines_unverifiable(world: World) -> None:
    key = world.register()
    world.dynamo.error = client_error("ProvisionedThroughputExceededException")
    world.logs.error = client_error("ThrottlingException")
    why = world.why(key, WRITTEN + 5, world.container())
    assert why is not None and not why.forged


def test_a_new_boots_key_the_ledger_cannot_tell_is_unverifiable_not_forged(world: World) -> None:
    """The container knows the node's earlier boot; the new boot's registration was kept by
    another container, and the ledger is throttled now: the new key is not called forged
    because the identity stream's newest events (junk) do not hold it."""
    old = world.register("boot-1")
    assert world.proves(old)
    new = world.register("boot-2", container=world.container())
    for _ in range(READ_DECRYPTS):
        world.logs.put(VICTIM, _junk())
    world.dynamo.error = client_error("ThrottlingException")
    world.clock.now += READ_INTERVAL

    why = world.why(new, WRITTEN + 60_000, fresh=True)

    assert why is not None and not why.forged and "the ledger cannot be read now" in why.reason
    world.dynamo.error = None
    assert world.proves(new, WRITTEN + 60_000)


def test_a_second_key_of_a_boot_is_refused_in_every_container(world: World) -> None:
    first = world.register("boot-1")
    second = world.register("boot-1", container=world.container())
    assert world.proves(first) and not world.proves(second)
    cold = world.container()
    assert world.proves(first, container=cold) and not world.proves(second, container=cold)


def test_a_key_registered_again_holds(world: World) -> None:
    """The agent registers its boot's key again on a timer (``agent.origin``): the same
    key again is no second key of the boot."""
    key = world.register()
    world.register(key=key, container=world.container())
    assert world.proves(key) and world.proves(key, container=world.container())


def test_an_earlier_boots_key_proves_no_line_once_a_later_boot_registered(world: World) -> None:
    """Whoever kept a key of a boot that ended (it lay in the node's state dir) cannot sign
    new lines with it, even for a container that starts cold."""
    old = world.register("boot-1")
    new = world.register("boot-2")
    cold = world.container()
    rebooted = WRITTEN + 1  # boot-2's registration

    why = world.why(old, rebooted + 60_000, cold)

    assert why is not None and why.forged
    assert "boot boot-2 registered before the line was written" in why.reason
    assert world.proves(old, rebooted - 1, cold), "the old boot's own lines still prove"
    assert world.proves(new, rebooted + 60_000, cold)
    why = world.why(new, WRITTEN - 1, cold)
    assert why is not None and why.forged and "began after the line" in why.reason


def test_a_container_that_knew_only_the_earlier_boots_key_asks_again_for_an_acting_line(
    world: World,
) -> None:
    old = world.register("boot-1")
    assert world.why(old, WRITTEN + 10, fresh=True) is None
    world.register("boot-2", container=world.container())

    why = world.why(old, WRITTEN + 60_000, fresh=True)

    assert why is not None and why.forged


def test_another_nodes_junk_costs_this_node_nothing(world: World) -> None:
    key = world.register()
    world.kms.decrypts = 0
    world.registry.begin()
    junk = [LogEvent("j", WRITTEN, registration_message(_junk())) for _ in range(100)]
    world.registry.learn(OTHER, junk)
    assert world.proves(key) and world.kms.decrypts == LEARN_DECRYPTS


def test_a_region_without_a_certificate_says_which_setting_and_reads_nothing() -> None:
    logs, kms = Logs(region="ap-southeast-6"), Kms()
    registry = LogsRegistrations(CLUSTER, None, logs, kms, Clock())
    with pytest.raises(OriginError, match=r"Region ap-southeast-6: .*identity_certificates"):
        registry.find(VICTIM, "00000000", 1)
    registry.learn(VICTIM, [LogEvent("1", 1, registration_message(_junk()))])
    assert logs.reads == [] and kms.decrypts == 0
    assert len(LogsRegistrations(CLUSTER, None, Logs(), Kms()).certificates) == 1
