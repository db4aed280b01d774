"""The classifier's registry of agent keys against what anyone holding the agents' shared
credential can write into an identity stream (any number of events), and against what
KMS and CloudWatch Logs may answer (a refusal is a reason, throttling a retry)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from agent.origin import registration_streams
from lambdas.classify.origin import DECRYPTS_PER_READ, READ_INTERVAL, LogsRegistrations
from nodemedic.contracts.logs import identity_stream, key_stream
from nodemedic.origin.identity import OriginError, load_certificates
from nodemedic.origin.signing import (
    KEY_BYTES,
    Registration,
    first_per_boot,
    key_id,
    sign,
    unproven,
)
from world.identity import identity_document, local_authority

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
    """GetLogEvents over the node log group's streams: the newest page of one, as
    CloudWatch pages it (``page`` events at most)."""

    def __init__(self, page: int = 10_000, region: str = "us-east-1") -> None:
        self.streams: dict[str, list[dict[str, Any]]] = {}
        self.written = 0
        """Events stamped so far: each is stamped a millisecond after the one before."""
        self.page = page
        self.calls: list[float] = []
        """When each GetLogEvents call was made (``clock``'s time)."""
        self.clock: Clock | None = None
        self.error: Exception | None = None
        self.meta = type("Meta", (), {"region_name": region})()

    @property
    def reads(self) -> int:
        return len(self.calls)

    def stamp(self) -> int:
        self.written += 1
        return WRITTEN + self.written - 1

    def put(self, stream: str, message: str, at: int | None = None) -> None:
        event = {"timestamp": self.stamp() if at is None else at, "message": message}
        self.streams.setdefault(stream, []).append(event)

    def get_log_events(self, **args: Any) -> dict[str, Any]:
        assert not args["startFromHead"] and "nextToken" not in args
        self.calls.append(self.clock.now if self.clock else 0.0)
        if self.error is not None:
            raise self.error
        if args["logStreamName"] not in self.streams:
            raise client_error("ResourceNotFoundException")
        events = self.streams[args["logStreamName"]]
        start = max(len(events) - self.page, 0)
        return {"events": events[start:], "nextBackwardToken": f"b{start}"}


class Kms:
    """Decrypt of the blobs it sealed; any other blob is refused as AWS refuses it."""

    def __init__(self, clock: Clock) -> None:
        self.sealed: dict[bytes, bytes] = {}
        self.decrypts = 0
        self.clock = clock
        self.refusal = "InvalidCiphertextException"

    def seal(self, plaintext: bytes) -> str:
        blob = secrets.token_bytes(32)
        self.sealed[blob] = plaintext
        return base64.b64encode(blob).decode("ascii")

    def decrypt(self, CiphertextBlob: bytes, EncryptionContext: dict[str, str]) -> dict[str, Any]:
        self.decrypts += 1
        if CiphertextBlob not in self.sealed:
            raise client_error(self.refusal)
        return {"Plaintext": self.sealed[CiphertextBlob]}


class World:
    def __init__(self) -> None:
        self.clock = Clock()
        self.logs = Logs()
        self.logs.clock = self.clock
        self.kms = Kms(self.clock)
        self.registry = self.container()
        self.keys: dict[str, str] = {}
        """The key id of each boot registered, by boot."""

    def container(self) -> LogsRegistrations:
        """The registry of a Lambda container that knows nothing yet."""
        return LogsRegistrations(CLUSTER, CERTIFICATES, self.logs, self.kms, self.clock)

    def register(self, boot: str = "boot-1", key: bytes | None = None) -> bytes:
        """Write a registration of ``key`` (a new one if None) for ``boot`` where the agent
        writes it (``agent.origin.registration_streams``)."""
        key = key or secrets.token_bytes(KEY_BYTES)
        document = identity_document(VICTIM, "us-east-1")
        registration = Registration(VICTIM, boot, key, document, AUTHORITY.sign(document))
        sealed = self.kms.seal(registration.to_json().encode())
        previous = None if boot in self.keys else self.keys.get(next(reversed(self.keys), ""))
        at = self.logs.stamp()
        for stream in registration_streams(VICTIM, key, previous):
            self.logs.put(stream, sealed, at)
        self.keys.setdefault(boot, key_id(key))
        return key

    def junk(self, count: int, stream: str | None = None) -> None:
        """``count`` events no KMS key sealed, newer than everything written, in ``stream``
        (the instance's identity stream if None)."""
        for _ in range(count):
            self.logs.put(
                stream or identity_stream(VICTIM),
                base64.b64encode(secrets.token_bytes(200)).decode("ascii"),
            )

    def proves(self, key: bytes, registry: LogsRegistrations | None = None) -> bool:
        line = sign(key, VICTIM, 1, XID79)
        return unproven(registry or self.registry, VICTIM, 1, line) is None


def test_ten_thousand_junk_events_newer_than_the_registration_hide_nothing() -> None:
    """Junk anyone with the agents' credential writes after a registration, into the
    instance's identity stream and into key streams of ids of its choosing, costs a cold
    container nothing: the line names its key's stream."""
    world = World()
    key = world.register()
    world.junk(10_000)
    for _ in range(100):
        world.junk(100, key_stream(VICTIM, key_id(secrets.token_bytes(KEY_BYTES))))
    assert world.proves(key, world.container())
    assert world.kms.decrypts == 1 and world.logs.reads == 1


def test_junk_in_the_keys_own_stream_costs_a_bounded_read_every_interval() -> None:
    """Whoever learns a key id (it is in every line the node ships) may write into that
    key's stream: a read decrypts at most ``DECRYPTS_PER_READ`` events and a node's streams
    are read once per interval; the key is unverifiable until the reads get through."""
    world = World()
    key = world.register()
    world.junk(120, key_stream(VICTIM, key_id(key)))
    reasons = set()
    for _ in range(100):
        why = unproven(world.registry, VICTIM, 1, sign(key, VICTIM, 1, XID79))
        assert why is not None and not why.forged
        reasons.add(why.reason)
    (reason,) = reasons
    assert f"stopped after {DECRYPTS_PER_READ} decrypts" in reason
    assert world.kms.decrypts == DECRYPTS_PER_READ and world.logs.reads == 1
    world.clock.now += READ_INTERVAL
    assert not world.proves(key) and world.kms.decrypts == 2 * DECRYPTS_PER_READ
    world.clock.now += READ_INTERVAL
    assert world.proves(key) and world.kms.decrypts == 121 and world.logs.reads == 3


def test_forged_lines_with_fresh_key_ids_cost_one_read_per_node_and_interval() -> None:
    """29 forged batches over 60 s, each with fresh key ids and newer times, acting lines
    and heartbeats alike: one GetLogEvents per 30 s, and the genuine key still proves."""
    world = World()
    key = world.register()
    assert world.proves(key)
    for batch in range(29):
        for line in range(4):
            at = WRITTEN + 1_000 * batch + line
            forged = sign(secrets.token_bytes(KEY_BYTES), VICTIM, at, XID79)
            unproven(world.registry, VICTIM, at, forged, fresh=line % 2 == 0)
        world.clock.now += 60 / 29
    assert world.proves(key)
    started = world.logs.calls[0]
    windows = [int((at - started) // READ_INTERVAL) for at in world.logs.calls]
    assert len(windows) == len(set(windows)) <= 3, world.logs.calls


def test_a_forged_key_read_for_is_forged_once_the_nodes_keys_are_known() -> None:
    world = World()
    key = world.register()
    assert world.proves(key)
    world.clock.now += READ_INTERVAL
    why = unproven(world.registry, VICTIM, 1, sign(b"x" * KEY_BYTES, VICTIM, 1, XID79))
    assert why is not None and why.forged and "is not registered" in why.reason


def test_a_key_not_read_for_yet_is_unverifiable_not_forged() -> None:
    """A read for another key came first in the interval: the line cannot be judged yet,
    which pages, and is no forgery."""
    world = World()
    first = world.register()
    assert world.proves(first)
    why = unproven(world.registry, VICTIM, 1, sign(b"x" * KEY_BYTES, VICTIM, 1, XID79))
    assert why is not None and not why.forged
    assert "read once every 30 s" in why.reason


def test_a_registration_kms_refuses_is_refused_with_the_reason_and_costs_no_other() -> None:
    """A key of another account answers AccessDenied: that registration is refused, the
    others still hold, and a node with no other is unverifiable, with the reason."""
    world = World()
    world.kms.refusal = "AccessDeniedException"
    key = world.register()
    world.junk(3, key_stream(VICTIM, key_id(key)))
    assert world.proves(key)
    alone = World()
    alone.kms.refusal = "AccessDeniedException"
    alone.junk(1, key_stream(VICTIM, key_id(key)))
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
def test_kms_throttling_or_failing_stops_the_read_and_the_next_read_goes_on(
    error: Exception,
) -> None:
    """The line is unverifiable with the reason (the batch goes on: nothing is raised),
    and the registration is decrypted at the next read."""
    world = World()
    key = world.register()
    decrypt = world.kms.decrypt

    def failing(**_: Any) -> None:
        raise error

    world.kms.decrypt = failing  # type: ignore[method-assign,assignment]
    why = unproven(world.registry, VICTIM, 1, sign(key, VICTIM, 1, XID79))
    assert why is not None and not why.forged and "KMS cannot decrypt now" in why.reason
    world.kms.decrypt = decrypt  # type: ignore[method-assign]
    world.clock.now += READ_INTERVAL
    assert world.proves(key)


def test_a_key_stream_refused_or_throttled_refuses_only_the_lines_of_keys_not_known() -> None:
    world = World()
    known = world.register()
    assert world.proves(known)
    later = world.register("boot-2")
    for error, reason in (
        (client_error("AccessDeniedException"), "cannot be read: AccessDeniedException"),
        (client_error("ThrottlingException"), "cannot be read: ThrottlingException"),
    ):
        world.logs.error = error
        world.clock.now += READ_INTERVAL
        at = WRITTEN + 10
        why = unproven(world.registry, VICTIM, at, sign(later, VICTIM, at, XID79))
        assert why is not None and not why.forged and reason in why.reason
        assert world.proves(known)


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
    world.clock.now += READ_INTERVAL
    why = unproven(world.registry, VICTIM, 1, sign(second, VICTIM, 1, XID79))
    assert why is not None and why.forged
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
    registrations = world.logs.streams[key_stream(VICTIM, key_id(key))]
    del registrations[0]  # the retention deleted the first registration
    line = sign(key, VICTIM, 1, XID79)
    assert unproven(world.container(), VICTIM, 1, line) is None
    assert len(registrations) == 1


def test_a_key_registered_just_after_a_read_proves_once_the_interval_is_over() -> None:
    """A boot's first line can be read for before its registration is visible: its lines
    prove from the next read on, one interval later."""
    world = World()
    world.register()
    key = secrets.token_bytes(KEY_BYTES)
    first, later = WRITTEN + 1_000, WRITTEN + 2_000
    assert unproven(world.registry, VICTIM, first, sign(key, VICTIM, first, XID79))
    world.register(boot="boot-2", key=key)
    world.clock.now += READ_INTERVAL
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
    cold = world.container()

    why = _line(cold, old, rebooted + 60_000)

    assert why is not None and why.forged
    assert "boot boot-2 registered before the line was written" in why.reason
    assert _line(cold, old, rebooted - 1) is None, "the old boot's own lines still prove"
    assert _line(cold, new, rebooted + 60_000) is None
    assert world.logs.reads == 1, "the old key's stream named the later boot's key"


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
    world.clock.now += READ_INTERVAL

    why = _line(world.registry, old, WRITTEN + 60_000, fresh=True)

    assert why is not None and why.forged and world.logs.reads == 2
