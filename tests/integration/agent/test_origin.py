"""The agent's half of proof of origin against a moto server (CloudWatch Logs and KMS) and
the local world's simulated IMDSv2, whose identity documents a test authority signs: the
key of a boot, its registration, and the mark on every event."""

from __future__ import annotations

import base64
import itertools
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from agent import bootcheck
from agent.config import Config
from agent.main import Agent
from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.contracts.logs import (
    ORIGIN_CONTEXT_CLUSTER,
    ORIGIN_CONTEXT_INSTANCE,
    deep_check_stream,
    identity_stream,
    kmsg_stream,
    node_log_group,
    origin_key_alias,
    parse_registration,
    registration_message,
    shipped_message,
)
from nodemedic.origin.identity import load_certificates
from nodemedic.origin.signing import Registration, check_registration, unproven
from tests.support.agent import CLUSTER, REGION, Running, append_lines, config, wait_for
from world.aws.identity import MetadataService, local_authority

AUTHORITY = local_authority()
_clusters = itertools.count()


@pytest.fixture
def kms(moto_url: str) -> Any:
    return boto3.client("kms", endpoint_url=moto_url, region_name=REGION)


@pytest.fixture
def origin_key(kms: Any) -> str:
    """The cluster's origin key, as the stack makes it (once per moto server)."""
    alias = origin_key_alias(CLUSTER)
    if not any(a["AliasName"] == alias for a in kms.list_aliases()["Aliases"]):
        kms.create_alias(AliasName=alias, TargetKeyId=kms.create_key()["KeyMetadata"]["KeyId"])
    return alias


@pytest.fixture
def imds(monkeypatch: pytest.MonkeyPatch, instance_id: str) -> Iterator[MetadataService]:
    service = MetadataService(AUTHORITY, REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", service.endpoint(instance_id))
    yield service
    service.close()


def events(logs: Any, stream: str, cluster: str = CLUSTER) -> list[tuple[int, str]]:
    """(timestamp ms, message) of every event of the stream, oldest first."""
    try:
        page = logs.get_log_events(
            logGroupName=node_log_group(cluster), logStreamName=stream, startFromHead=True
        )
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [(e["timestamp"], e["message"]) for e in page["events"]]


def shipped_lines(logs: Any, stream: str, cluster: str = CLUSTER) -> list[tuple[int, str]]:
    """The events of a kmsg stream but its registration lines."""
    return [(t, m) for t, m in events(logs, stream, cluster) if parse_registration(m) is None]


def registrations(logs: Any, kms: Any, cfg: Config) -> list[Registration]:
    """The identity stream's registrations, decrypted as the classifier does: with the
    cluster and the instance as encryption context."""
    context = {ORIGIN_CONTEXT_CLUSTER: cfg.cluster, ORIGIN_CONTEXT_INSTANCE: cfg.instance_id}
    return [
        Registration.from_json(
            kms.decrypt(CiphertextBlob=base64.b64decode(m), EncryptionContext=context)["Plaintext"]
        )
        for _, m in events(logs, identity_stream(cfg.instance_id), cfg.cluster)
    ]


class Known:
    """The registrations the classifier would hold for one instance."""

    def __init__(self, found: list[Registration]) -> None:
        self.by_id = {r.key_id: r for r in found}

    def find(
        self, instance_id: str, key_id: str, written_ms: int, *, fresh: bool = False
    ) -> Registration | None:
        return self.by_id.get(key_id)


def run(cfg: Config, lines: list[str], logs: Any, expected: int) -> Running:
    running = Running(Agent(cfg))
    append_lines(Path(cfg.kmsg), lines)
    stream = kmsg_stream(cfg.instance_id)
    wait_for(lambda: len(shipped_lines(logs, stream, cfg.cluster)) >= expected, "kernel lines")
    return running


@pytest.mark.usefixtures("origin_key", "imds")
def test_the_agent_registers_its_boot_key_once_and_signs_every_event(
    tmp_path: Path, moto_url: str, logs: Any, kms: Any, instance_id: str
) -> None:
    cfg = config(tmp_path, moto_url, instance_id, sign=True)
    lines = [f"line {n}" for n in range(20)]

    run(cfg, lines, logs, len(lines)).close()

    (registration,) = registrations(logs, kms, cfg)
    assert (registration.instance_id, registration.boot_id) == (instance_id, cfg.boot_id)
    check_registration(
        registration, instance_id, load_certificates(AUTHORITY.certificate_pem), datetime.now(UTC)
    )
    with pytest.raises(kms.exceptions.InvalidCiphertextException):
        (_, sealed), *_ = events(logs, identity_stream(instance_id))
        kms.decrypt(
            CiphertextBlob=base64.b64decode(sealed),
            EncryptionContext={ORIGIN_CONTEXT_CLUSTER: CLUSTER, ORIGIN_CONTEXT_INSTANCE: "i-0ff"},
        )
    (_, first), *shipped = events(logs, kmsg_stream(instance_id))
    assert first == registration_message(sealed), "the kmsg stream's first line"
    known = Known([registration])
    assert [unproven(known, instance_id, ts, m) for ts, m in shipped] == [None] * len(lines)
    assert [m.split("] ", 1)[1] for _, m in shipped] == [shipped_message(x, None) for x in lines]
    key_file = cfg.state_dir / "origin-key.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.mark.usefixtures("origin_key", "imds")
def test_a_restart_keeps_the_boots_key_and_a_new_boot_gets_a_new_one(
    tmp_path: Path, moto_url: str, logs: Any, kms: Any, instance_id: str
) -> None:
    cfg = config(tmp_path, moto_url, instance_id, sign=True)
    run(cfg, ["first start"], logs, 1).close()
    run(cfg, ["restarted"], logs, 2).close()
    rebooted = config(tmp_path, moto_url, instance_id, sign=True, boot_id="b-2")
    Path(rebooted.kmsg).write_text("")
    run(rebooted, ["new boot"], logs, 3).close()

    first, again, new_boot = registrations(logs, kms, cfg)
    assert (first.boot_id, again.boot_id, new_boot.boot_id) == (cfg.boot_id, cfg.boot_id, "b-2")
    assert again.key == first.key
    assert new_boot.key != first.key
    shipped = shipped_lines(logs, kmsg_stream(instance_id))
    known = Known([first, new_boot])
    assert [unproven(known, instance_id, ts, m) for ts, m in shipped] == [None] * 3
    key_file = cfg.state_dir / "origin-key.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.mark.usefixtures("imds")
def test_without_the_origin_key_it_ships_unsigned_says_so_and_registers_once_it_exists(
    tmp_path: Path, moto_url: str, logs: Any, kms: Any, instance_id: str
) -> None:
    cluster = f"late-key-{next(_clusters)}"
    cfg = config(tmp_path, moto_url, instance_id, sign=True, cluster=cluster, register_retry=0.3)
    running = run(cfg, ["before"], logs, 1)
    assert running.agent.metrics.registration_failures >= 1
    assert running.agent.metrics.signing == 0
    (_, before), *_ = events(logs, kmsg_stream(instance_id), cluster)
    assert before == shipped_message("before", None), "shipped unsigned"

    kms.create_alias(
        AliasName=origin_key_alias(cluster), TargetKeyId=kms.create_key()["KeyMetadata"]["KeyId"]
    )
    wait_for(lambda: running.agent.metrics.signing == 1, "the registration")
    append_lines(Path(cfg.kmsg), ["after"])
    stream = kmsg_stream(instance_id)
    wait_for(lambda: len(shipped_lines(logs, stream, cluster)) == 2, "the line after")
    running.close()

    (registration,) = registrations(logs, kms, cfg)
    (_, _), (ts, after) = shipped_lines(logs, stream, cluster)
    assert unproven(Known([registration]), instance_id, ts, after) is None


@pytest.fixture
def patient_key_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent waits three registration tries (3 s in these tests) before it ships
    unsigned; on a busy machine the key a test registers may come later. A generous
    deadline, met as soon as the key is registered."""
    monkeypatch.setattr(bootcheck, "KEY_TRIES", 60)


@pytest.mark.usefixtures("imds", "patient_key_wait")
def test_the_start_up_deep_check_waits_for_the_boots_key_and_ships_signed(
    tmp_path: Path, moto_url: str, logs: Any, kms: Any, instance_id: str
) -> None:
    """The boot counts as checked once its verdict is shipped, and where proof of origin is
    enforced an unsigned verdict admits nothing: shipped before a slow first registration,
    it would hold a good node out for ever. It waits for the registration's retry."""
    cluster = f"late-key-{next(_clusters)}"
    (tmp_path / "sys").mkdir()
    cfg = config(
        tmp_path,
        moto_url,
        instance_id,
        sign=True,
        cluster=cluster,
        register_retry=1.0,
        deep_check_at_start=True,
        sys_root=tmp_path / "sys",
    )
    running = Running(Agent(cfg))
    wait_for(lambda: running.agent.metrics.registration_failures >= 1, "a failed try")
    stream = deep_check_stream(instance_id)
    assert events(logs, stream, cluster) == [], "no verdict before the key"
    kms.create_alias(
        AliasName=origin_key_alias(cluster), TargetKeyId=kms.create_key()["KeyMetadata"]["KeyId"]
    )
    verdict = lambda: any(DEEP_CHECK_VERDICT in m for _, m in events(logs, stream, cluster))  # noqa: E731
    wait_for(verdict, "the deep check's verdict")
    running.close()

    (registration,) = registrations(logs, kms, cfg)
    shipped = events(logs, stream, cluster)
    assert [unproven(Known([registration]), instance_id, ts, m) for ts, m in shipped] == [
        None
    ] * len(shipped)


@pytest.mark.usefixtures("origin_key", "imds")
def test_a_running_agent_registers_its_key_again_after_the_interval(
    tmp_path: Path, moto_url: str, logs: Any, kms: Any, instance_id: str
) -> None:
    """So that the log group's retention never deletes the last registration of a key that
    still signs (``agent.origin.REGISTER_INTERVAL``)."""
    cfg = config(tmp_path, moto_url, instance_id, sign=True, register_interval=0.3)
    running = run(cfg, ["line"], logs, 1)
    stream = identity_stream(instance_id)
    wait_for(lambda: len(events(logs, stream)) >= 3, "two registrations more")
    running.close()

    first, *again = registrations(logs, kms, cfg)
    assert {(r.boot_id, r.key) for r in again} == {(cfg.boot_id, first.key)}
    assert running.agent.metrics.registration_failures == 0
