"""The agent's loop: three threads that block instead of polling.

- the collector (the calling thread) reads the kernel log, turns lines into events and
  closes a batch when it is full or its oldest line is ``flush_interval`` old;
- the checks thread runs the health checks at start-up and then every ``check_interval``;
- the shipper thread sends batches oldest first, spooling to disk when it cannot.

On stop (SIGTERM) the collector flushes, the shipper gets ``shutdown_grace`` seconds to
send what it can, and the rest is spooled; the checkpoint is saved as batches become safe."""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError

from agent import bootcheck, healthship
from agent.batch import MAX_BATCH_EVENTS, Batch, Batcher, add_all, clamp_ms
from agent.checkpoint import Checkpoint, CheckpointStore, Progress, resume_point
from agent.checks import registered
from agent.checks.base import Check, Runner, worst
from agent.config import Config
from agent.kmsg import DevKmsgReader, FileKmsgReader, Line, Reader, is_device
from agent.liveness import Liveness
from agent.metrics import Metrics, metrics_server, serve
from agent.origin import (
    SealError,
    Signer,
    boot_key,
    keep_registered,
    kms_encrypt,
    registration_batches,
    sealed_registration,
    signer,
)
from agent.outbox import Outbox
from agent.pstore import ShippedDumps, read_dumps
from agent.shipper import SHIPPER_LOOP, Shipper
from agent.spool import Spool
from agent.telemetry import dcgm_named, telemetry
from agent.telemetry.emf import emf_lines
from nodemedic.contracts.logs import (
    deep_check_stream,
    health_stream,
    heartbeat_message,
    kmsg_stream,
    node_log_group,
    telemetry_stream,
)
from nodemedic.contracts.release import VERSION
from nodemedic.health.result import Result
from nodemedic.origin.signing import SIGNATURE_BYTES, Registration

log = logging.getLogger(__name__)
CONNECT_SECONDS = 3
READ_SECONDS = 20
CALLS_PER_TURN = 3
"""At most three calls in one turn of the shipper (CreateLogStream, PutLogEvents, and the
restamped retry of a refused batch), each bounded by the client's timeouts."""
COLLECTOR_LOOP = "collector"
CHECKS_LOOP = "checks"


def logs_client(region: str, endpoint_url: str | None) -> Any:
    """A CloudWatch Logs client that does not retry on its own: the shipper does, so it
    can spool instead of blocking."""
    from botocore.config import Config as BotoConfig

    from agent.botosession import session

    client = session().create_client(
        "logs",
        region_name=region,
        endpoint_url=endpoint_url,
        config=BotoConfig(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=CONNECT_SECONDS,
            read_timeout=READ_SECONDS,
            max_pool_connections=1,
            parameter_validation=False,
        ),
    )
    # botocore's loader keeps every JSON file it parsed for as long as the client lives;
    # the client needs none of them after it is built, and freeing them leaves that memory
    # for the agent's own batches.
    loader = getattr(client, "_loader", None)
    cache = getattr(loader, "_cache", None)
    if isinstance(cache, dict):
        cache.clear()
    return client


def build_checks(config: Config) -> list[Check]:
    """The checks ``config`` names, in ``agent.checks.all``' order whatever the order named."""
    return [check.build(config) for check in registered() if check.name in config.checks]


def start_position(
    saved: Checkpoint | None, spool: Spool, boot_id: str, device: bool
) -> Checkpoint:
    """After the last safe record: the checkpoint, or a spooled batch saved after it (the
    agent stopped between spooling a batch and saving the checkpoint; every batch before a
    spooled one is spooled or acknowledged, see ``outbox``)."""
    start = resume_point(saved, boot_id, -1 if device else 0)
    for cursor in spool.cursors():
        if cursor.boot_id == boot_id and cursor.seq > start.seq:
            start = cursor
    return start


def open_reader(path: str, start: Checkpoint) -> Reader:
    if is_device(path):
        return DevKmsgReader(path, start.seq)
    return FileKmsgReader(path, start.seq, start.offset)


def batch_lines(lines: list[Line], batcher: Batcher, boot_id: str, boot_ms: int) -> list[Batch]:
    """Feed kernel log lines to ``batcher``; returns the batches that filled up.

    A record is stamped with its own time (boot time plus its kernel timestamp, clamped to
    what the service accepts), a plain line with the time it was read. Each batch carries
    the position of its last line, for the checkpoint.
    """
    now_ms = int(time.time() * 1000)
    full: list[Batch] = []
    previous: Line | None = None
    for line in lines:
        ts_us = line.ts_us
        ts_ms = now_ms if ts_us is None else clamp_ms(boot_ms + ts_us // 1000, now_ms)
        closed = batcher.add(ts_ms, line.message)
        if closed is not None:
            if previous is not None:
                closed.cursor = Checkpoint(boot_id, previous.seq, previous.offset)
            full.append(closed)
        previous = line
    if previous is not None:
        batcher.position(Checkpoint(boot_id, previous.seq, previous.offset))
    return full


class Agent:
    def __init__(
        self, config: Config, client: Any | None = None, checks: list[Check] | None = None
    ) -> None:
        self.config = config
        config.state_dir.mkdir(parents=True, exist_ok=True)
        self.metrics = Metrics()
        self.liveness = Liveness(config.stall_grace)
        self.metrics.loop_ages = self.liveness.ages
        self.spool = Spool(config.state_dir / "spool", config.spool_max_bytes)
        store = CheckpointStore(config.state_dir / "checkpoint.json")
        device = is_device(config.kmsg)
        saved = store.load()
        self.start = start_position(saved, self.spool, config.boot_id, device)
        self.previous_boot_id = (
            saved.boot_id if saved is not None and saved.boot_id != config.boot_id else None
        )
        """The boot the agent shipped from before this one: the one pstore's records are of."""
        self.progress = Progress(store, self.start)
        self.outbox = Outbox(self.spool, self.metrics, self.progress, config.memory_batches)
        self.client = (
            client if client is not None else logs_client(config.region, config.endpoint_url)
        )
        self.shipper = Shipper(
            self.client,
            node_log_group(config.cluster),
            self.outbox,
            self.metrics,
            create_group=config.create_log_group,
            base_delay=config.retry_base_delay,
            max_delay=config.retry_max_delay,
            liveness=self.liveness,
        )
        self.sign: Signer | None = None
        """Marks every event with this boot's signature once the instance identity
        document was read (``agent.origin``); without one, events ship unsigned."""
        self.keyed = threading.Event()
        self.changes = healthship.Changes(config.healthy_every)
        self.runner = Runner(build_checks(config) if checks is None else checks)
        self.telemetry = telemetry(self.runner.checks)
        self.metrics.telemetry = dcgm_named(self.telemetry, config.dcgm_names, config.metric_prefix)
        self.server = (
            metrics_server(
                self.metrics,
                config.metrics_address,
                config.metrics_port,
                stalled=self.liveness.stalled,
            )
            if config.metrics_port
            else None
        )

    def run(self, stop: threading.Event) -> None:
        config = self.config
        reader = open_reader(config.kmsg, self.start)
        producers_done = threading.Event()
        shipper = threading.Thread(
            target=self.shipper.run, args=(producers_done, config.shutdown_grace), name="shipper"
        )
        checks = threading.Thread(target=self._check_loop, args=(stop,), name="checks", daemon=True)
        turn = CALLS_PER_TURN * (CONNECT_SECONDS + READ_SECONDS) + config.retry_max_delay
        self.liveness.expect(SHIPPER_LOOP, turn)
        self.liveness.expect(COLLECTOR_LOOP, config.flush_interval)
        self.liveness.expect(CHECKS_LOOP, config.check_interval)
        if self.server is not None:
            serve(self.server)
        shipper.start()
        # Registered before anything is read, so the boot's first lines ship signed; then
        # again on a timer, so the log group's retention never leaves it without one.
        if config.sign:
            registered = self._register()
            threading.Thread(
                target=keep_registered,
                args=(self._register, stop.wait, registered),
                kwargs={"interval": config.register_interval, "retry": config.register_retry},
                name="registration",
                daemon=True,
            ).start()
        checks.start()
        if config.deep_check_at_start and not bootcheck.checked_this_boot(config):
            check = (config, self.keyed.wait, self.deep_check)
            threading.Thread(target=bootcheck.once_keyed, args=check, daemon=True).start()
        log.info(
            "agent started: group %s, kmsg %s from %s, %d checks",
            node_log_group(config.cluster),
            config.kmsg,
            self.start,
            len(self.runner.checks),
        )
        try:
            self._ship_pstore()
            self._collect(reader, stop)
        finally:
            reader.close()
            checks.join(timeout=2.0)
            producers_done.set()
            shipper.join()
            if self.server is not None:
                self.server.shutdown()
                self.server.server_close()
        log.info("agent stopped at %s", self.progress.current)

    def deep_check(self) -> list[Result]:
        """Run the deep check and queue its lines (``agent.bootcheck``)."""
        batcher = self._batcher(deep_check_stream(self.config.instance_id))
        return bootcheck.deep_check(self.config, batcher, self.outbox.put)

    def deep_check_once(self) -> list[Result]:
        """``nodemedic agent --deep-check``: run it now, ship its lines, and stop."""
        if self.config.sign:
            self._register()
        results = self.deep_check()
        done = threading.Event()
        done.set()
        self.shipper.run(done, self.config.shutdown_grace)
        return results

    def _collect(self, reader: Reader, stop: threading.Event) -> None:
        config = self.config
        batcher = self._batcher(kmsg_stream(config.instance_id), config.max_batch_events)
        boot_ms = int((time.time() - time.monotonic()) * 1000)
        next_beat = time.monotonic() + config.heartbeat_interval
        while not stop.is_set():
            self.liveness.beat(COLLECTOR_LOOP)
            if time.monotonic() >= next_beat:
                # Through the collector: a heartbeat proves that collection turns, and
                # its arrival that shipping does.
                next_beat = time.monotonic() + config.heartbeat_interval
                self._put(batcher.add(int(time.time() * 1000), self._heartbeat()))
            timeout = config.flush_interval  # also how long a stop may wait for the reader
            if batcher.pending:
                timeout += batcher.opened_at - time.monotonic()
            lines = reader.read(max(0.0, timeout))
            if lines:
                for batch in batch_lines(lines, batcher, config.boot_id, boot_ms):
                    self.outbox.put(batch)
                self.metrics.read(lines)
            if batcher.pending and time.monotonic() - batcher.opened_at >= config.flush_interval:
                self._put(batcher.flush())
        self._put(batcher.flush())

    def _batcher(self, stream: str, max_events: int = MAX_BATCH_EVENTS) -> Batcher:
        if not self.config.sign:
            return Batcher(stream, max_events)
        return Batcher(stream, max_events, sign=self._mark, sign_bytes=SIGNATURE_BYTES)

    def _mark(self, timestamp_ms: int, text: str) -> str:
        sign = self.sign
        return text if sign is None else sign(timestamp_ms, text)

    def _register(self) -> bool:
        """Sign from now on with this boot's key, and queue its registration ahead of every
        line signed with it; False when it failed (off EC2, no origin key, KMS away): the
        agent ships unsigned meanwhile, and says so, since a cluster that enforces proof
        of origin then only notifies its faults."""
        from agent.imds import IdentityError, identity_document

        config = self.config
        try:
            document, signature = identity_document()
            key = boot_key(config.state_dir, config.boot_id)
            registration = Registration(
                config.instance_id, config.boot_id, key, document, signature
            )
            encrypt = kms_encrypt(config.region, config.endpoint_url)
            sealed = sealed_registration(encrypt, config.cluster, registration)
        except (IdentityError, OSError, SealError, BotoCoreError) as exc:
            self.metrics.registration_failures += 1
            log.warning(
                "%s (registration tried again in %.0f s): %s",
                "shipping unsigned, no proof of origin"
                if self.sign is None
                else "still signing, but the key's registration was not renewed",
                config.register_retry,
                exc,
            )
            return False
        for batch in registration_batches(config.instance_id, sealed, int(time.time() * 1000)):
            self.outbox.put(batch)
        self.sign = signer(key, config.instance_id)
        self.metrics.signing = 1
        self.keyed.set()
        log.info("signing every event with key %s", registration.key_id)
        return True

    def _heartbeat(self) -> str:
        metrics = self.metrics
        return heartbeat_message(
            {
                "interval": math.ceil(self.config.heartbeat_interval),
                "lines_read": metrics.lines_read,
                "spool_bytes": metrics.spool_bytes,
                "put_failures": metrics.put_failures,
                "credential_failures": metrics.credential_failures,
                "events_dropped": metrics.events_dropped,
                "version": VERSION,
            }
        )

    def _ship_pstore(self) -> None:
        """Queue the records pstore kept of the boot that died, ahead of the new boot's
        lines; they are remembered as shipped once the batch holding the last is safe (a
        stop before that ships them again: at least once, like every batch)."""
        config = self.config
        shipped = ShippedDumps(config.state_dir / "pstore-shipped.json")
        batcher = self._batcher(kmsg_stream(config.instance_id), config.max_batch_events)
        now_ms = int(time.time() * 1000)
        digests = []
        for dump in read_dumps(config.pstore_dir, self.previous_boot_id, shipped.load()):
            log.info("shipping pstore record %s: %d lines", dump.name, len(dump.messages))
            for message in dump.messages:
                self._put(batcher.add(now_ms, message))
            digests.append(dump.digest)
        last = batcher.flush()
        if last is not None:
            last.on_safe = functools.partial(shipped.add, digests)
            self.outbox.put(last)

    def _put(self, batch: Batch | None) -> None:
        if batch is not None:
            self.outbox.put(batch)

    def _check_loop(self, stop: threading.Event) -> None:
        batcher = self._batcher(health_stream(self.config.instance_id))
        while not stop.is_set():
            self.liveness.beat(CHECKS_LOOP)
            results, commits = self.runner.run(datetime.now(UTC))
            now_ms = int(time.time() * 1000)
            shipped = self.changes.to_ship(results, time.monotonic())
            healthship.ship(batcher, shipped, commits, now_ms, self.outbox.put)
            for check in {r.check for r in results}:
                self.metrics.check_status[check] = worst([r for r in results if r.check == check])
            if self.config.telemetry_emf:
                self._ship_telemetry(now_ms)
            stop.wait(self.config.check_interval)

    def _ship_telemetry(self, now_ms: int) -> None:
        """The telemetry the checks just read, as EMF lines. Never signed: CloudWatch parses
        a line as EMF only when it is bare JSON, and no rule reads these lines."""
        config = self.config
        lines = emf_lines(self.telemetry(), config.cluster, config.instance_id, now_ms)
        batcher = Batcher(telemetry_stream(config.instance_id))
        self._put(add_all(batcher, now_ms, lines, self.outbox.put))
