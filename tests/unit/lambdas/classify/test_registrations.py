"""The classifier's registry of agent keys against what anyone holding the agents' shared
credential can write into an identity stream (any number of events), and against what
KMS and CloudWatch Logs may answer (a refusal is a reason, throttling a retry)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from lambdas.classify.errors import Retryable
from lambdas.classify.origin import EARLY_READ, READ_INTERVAL, READ_SECONDS, LogsRegistrations
from nodemedic.contracts.logs import identity_stream
from nodemedic.origin.identity import OriginError, load_certificates
from nodemedic.origin.signing import (
    KEY_BYTES,
    Registration,
    first_per_boot,
    key_id,
    sign,
    unproven,
)
from world.aws.identity import identity_document, local_authority

CLUSTER, VICTIM = "trn-prod", "i-0a1b2c3d4e5f60718"
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
    """GetLogEvents over one identity stream, in pages, both ways, as CloudWatch pages it."""

    def __init__(self, page: int = 10_000, region: str = "us-east-1") -> None:
        self.events: list[dict[str, Any]] = []
        self.page = page
        self.reads = 0
        """Reads begun (their first page)."""
        self.error: Exception | None = None
        self.meta = type("Meta", (), {"region_name": region})()

    def put(self, message: str) -> None:
        self.events.append({"timestamp": WRITTEN + len(self.events), "message": message})

    def get_log_events(self, **args: Any) -> dict[str, Any]:
        token = args.get("nextToken")
        self.reads += token is None
        if self.error is not None:
            raise self.error
        if args["logStreamName"] != identity_stream(VICTIM):
            raise client_error("ResourceNotFoundException")
        last = len(self.events)
        if token is None:
            start, end = (0, self.page) if args["startFromHead"] else (last - self.page, last)
        elif token.startswith("f"):
            start = int(token[1:])
            end = start + self.page
        else:
            end = int(token[1:])
            start = end - self.page
        start, end = max(start, 0), min(end, last)
        return {
            "events": self.events[start:end],
            "nextForwardToken": f"f{end}",
            "nextBackwardToken": f"b{start}",
        }


class Kms:
    """Decrypt of the blobs it sealed; any other blob is refused as AWS refuses it."""

    def __init__(self, clock: Clock, seconds: float = 0.0) -> None:
        self.sealed: dict[bytes, bytes] = {}
        self.decrypts = 0
        self.clock, self.seconds = clock, seconds
        self.refusal = "InvalidCiphertextException"

    def seal(self, plaintext: bytes) -> str:
        blob = secrets.token_bytes(32)
        self.sealed[blob] = plaintext
        return base64.b64encode(blob).decode("ascii")

    def decrypt(self, CiphertextBlob: bytes, EncryptionContext: dict[str, str]) -> dict[str, Any]:
        self.decrypts += 1
        self.clock.now += self.seconds
        if CiphertextBlob not in self.sealed:
            raise client_error(self.refusal)
        return {"Plaintext": self.sealed[CiphertextBlob]}


class World:
    def __init__(self, seconds_per_decrypt: float = 0.0) -> None:
        self.clock = Clock()
        self.logs = Logs()
        self.kms = Kms(self.clock, seconds_per_decrypt)
        self.registry = LogsRegistrations(CLUSTER, CERTIFICATES, self.logs, self.kms, self.clock)

    def register(self, boot: str = "boot-1", key: bytes | None = None) -> bytes:
        """Write a registration of ``key`` (a new one if None) for ``boot``."""
        key = key or secrets.token_bytes(KEY_BYTES)
        document = identity_document(VICTIM, "us-east-1")
        registration = Registration(VICTIM, boot, key, document, AUTHORITY.sign(document))
        self.logs.put(self.kms.seal(registration.to_json().encode()))
        return key

    def junk(self, count: int) -> None:
        for _ in range(count):
            self.logs.put(base64.b64encode(secrets.token_bytes(200)).decode("ascii"))

    def proves(self, key: bytes) -> bool:
        line = sign(key, VICTIM, 1, XID79)
        return unproven(self.registry, VICTIM, 1, line) is None


def test_a_thousand_junk_events_before_the_registration_do_not_hide_it() -> None:
    world = World()
    world.junk(1000)
    key = world.register()
    assert world.proves(key)
    assert world.kms.decrypts == 1  # read from the newest


def test_junk_after_the_registration_is_decrypted_once_per_container() -> None:
    world = World()
    key = world.register()
    world.junk(1000)
    assert world.proves(key)
    assert world.kms.decrypts == 1001
    world.clock.now += READ_INTERVAL
    assert not world.proves(secrets.token_bytes(KEY_BYTES))
    assert world.kms.decrypts == 1001 and world.logs.reads == 2


def test_a_flood_of_fresh_key_ids_costs_one_read_per_interval() -> None:
    world = World()
    key = world.register()
    for _ in range(500):
        assert not world.proves(secrets.token_bytes(KEY_BYTES))
    assert world.logs.reads == 1
    world.clock.now += READ_INTERVAL
    for _ in range(500):
        world.proves(secrets.token_bytes(KEY_BYTES))
    assert world.logs.reads == 2 and world.proves(key)


def test_a_read_stops_after_its_time_and_a_later_one_goes_on() -> None:
    world = World(seconds_per_decrypt=0.125)
    key = world.register()
    world.junk(60)
    line = sign(key, VICTIM, 1, XID79)
    why = unproven(world.registry, VICTIM, 1, line)
    assert why is not None and not why.forged
    assert f"the read stopped after {READ_SECONDS:.0f} s" in why.reason
    assert world.kms.decrypts == READ_SECONDS / 0.125
    world.clock.now += READ_INTERVAL
    assert world.proves(key) and world.kms.decrypts == 61


def test_a_registration_kms_refuses_is_refused_with_the_reason_and_costs_no_other() -> None:
    """A key of another account answers AccessDenied: that registration is refused, the
    others still hold, and a node with no other is unverifiable, with the reason."""
    world = World()
    world.kms.refusal = "AccessDeniedException"
    key = world.register()
    world.junk(3)
    assert world.proves(key)
    alone = World()
    alone.kms.refusal = "AccessDeniedException"
    alone.junk(1)
    why = unproven(alone.registry, VICTIM, 1, sign(key, VICTIM, 1, XID79))
    assert why is not None and not why.forged
    assert "does not decrypt as " + VICTIM + "'s: AccessDeniedException" in why.reason


@pytest.mark.parametrize(
    "error",
    [
        client_error("ThrottlingException"),
        client_error("KMSInternalException", 500),
        client_error("DependencyTimeoutException", 503),
        EndpointConnectionError(endpoint_url="https://kms.us-east-1.amazonaws.com"),
    ],
    ids=["throttling", "internal", "timeout", "unreachable"],
)
def test_kms_throttling_or_failing_is_retried_by_lambda(error: Exception) -> None:
    world = World()
    world.register()

    def decrypt(**_: Any) -> None:
        raise error

    world.kms.decrypt = decrypt  # type: ignore[method-assign,assignment]
    with pytest.raises(Retryable, match="retried by Lambda"):
        world.registry.find(VICTIM, "00000000", 1)


def test_the_identity_stream_refused_is_a_reason_throttled_a_retry() -> None:
    world = World()
    world.logs.error = client_error("AccessDeniedException")
    with pytest.raises(OriginError, match="identity stream cannot be read: AccessDenied"):
        world.registry.find(VICTIM, "00000000", 1)
    throttled = World()
    throttled.logs.error = client_error("ThrottlingException")
    with pytest.raises(Retryable):
        throttled.registry.find(VICTIM, "00000000", 1)


def test_a_region_without_a_certificate_says_which_setting_and_reads_nothing() -> None:
    logs = Logs(region="ap-southeast-6")
    registry = LogsRegistrations(CLUSTER, None, logs, Kms(Clock()))
    with pytest.raises(OriginError, match=r"Region ap-southeast-6: .*identity_certificates"):
        registry.find(VICTIM, "00000000", 1)
    assert logs.reads == 0
    assert len(LogsRegistrations(CLUSTER, None, Logs(), Kms(Clock())).certificates) == 1


def test_a_second_key_of_a_boot_is_refused_once_the_first_is_read() -> None:
    world = World()
    first = world.register("boot-1")
    second = world.register("boot-1")
    assert world.proves(first)
    assert not world.proves(second)
    assert world.kms.decrypts == 2


def test_a_key_registered_again_holds_and_the_newest_registration_alone_proves() -> None:
    """The agent registers its boot's key again on a timer (``agent.origin``), since the log
    group deletes events older than its retention: the same key again is no second key of
    the boot, and once the first registration expired, a new container finds the key in
    the newest one alone."""
    world = World()
    key = world.register()
    world.register(key=key)
    assert world.proves(key)
    again = Registration(VICTIM, "boot-1", key, identity_document(VICTIM, "us-east-1"), "")
    assert first_per_boot([again, again]) == ({key_id(key): again}, []), "nothing refused"
    del world.logs.events[0]  # the retention deleted the first registration
    cold = LogsRegistrations(CLUSTER, CERTIFICATES, world.logs, world.kms, world.clock)
    line = sign(key, VICTIM, 1, XID79)
    assert unproven(cold, VICTIM, 1, line) is None
    assert len(world.logs.events) == 1


def test_a_key_registered_just_after_a_read_proves_a_later_line_before_the_interval() -> None:
    """A boot's first line can be read for before its registration lands; the deep check's
    pass a little later must not wait out the interval (it comes once, and a pass dropped
    leaves the node behind the health-check taint)."""
    world = World()
    world.register()
    early = secrets.token_bytes(KEY_BYTES)
    first, later = WRITTEN + 1_000, WRITTEN + 2_000
    assert unproven(world.registry, VICTIM, first, sign(early, VICTIM, first, XID79))
    key = world.register(boot="boot-2")
    world.clock.now += EARLY_READ
    assert unproven(world.registry, VICTIM, later, sign(key, VICTIM, later, XID79)) is None
    assert world.logs.reads == 2


def _line(registry: LogsRegistrations, key: bytes, at: int, *, fresh: bool = False) -> Any:
    return unproven(registry, VICTIM, at, sign(key, VICTIM, at, XID79), fresh=fresh)


def test_an_earlier_boots_key_proves_no_line_once_a_later_boot_registered() -> None:
    """Whoever kept a key of a boot that ended (it lay in the node's state dir) cannot sign
    new lines with it, even for a container that reads the stream for the first time."""
    world = World()
    old = world.register("boot-1")
    new = world.register("boot-2")
    rebooted = WRITTEN + 1  # boot-2's registration
    cold = LogsRegistrations(CLUSTER, CERTIFICATES, world.logs, world.kms, world.clock)

    why = _line(cold, old, rebooted + 60_000)

    assert why is not None and why.forged
    assert "boot boot-2 registered before the line was written" in why.reason
    assert _line(cold, old, rebooted - 1) is None, "the old boot's own lines still prove"
    assert _line(cold, new, rebooted + 60_000) is None


def test_a_later_boots_key_proves_no_line_from_before_the_earlier_boot_registered() -> None:
    world = World()
    old = world.register("boot-1")
    new = world.register("boot-2")
    assert _line(world.registry, old, WRITTEN) is None  # read back to boot-1's registration

    why = _line(world.registry, new, WRITTEN - 1)

    assert why is not None and why.forged and "began after the line" in why.reason
    assert _line(world.registry, new, WRITTEN) is None, "its kernel's lines before it registered"


def test_a_container_that_knew_only_the_earlier_boots_key_reads_again_for_an_acting_line() -> None:
    world = World()
    old = world.register("boot-1")
    assert _line(world.registry, old, WRITTEN + 10, fresh=True) is None
    world.register("boot-2")
    world.clock.now += EARLY_READ

    why = _line(world.registry, old, WRITTEN + 60_000, fresh=True)

    assert why is not None and why.forged and world.logs.reads == 2
