"""The scale bench's writers: one identity per node, registered and sealed as its agent's
would be, and each node's signed lines written to its stream by a pool of threads, as its
agent would ship them (``bench.scale``)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config

from bench.storm import WRITERS, Writers
from nodemedic.contracts.logs import heartbeat_message, identity_stream, kmsg_stream
from world.aws.motoserver import REGION
from world.aws.origins import NodeIdentity, kms_encrypt, node_identity
from world.world import World

WRITE_ANSWER_SECONDS = 900
"""How long a fault's PutLogEvents may take to answer: moto classifies the line first."""


class SignedWriters(Writers):
    """The nodes' streams, each node signing with its own key; records when each write began
    (the line is in the log group from then: moto delivers it before the call returns)."""

    def __init__(self, world: World) -> None:
        super().__init__(world)
        # A write answers once moto has classified its line, which in a storm queues behind
        # the others' (on AWS the delivery is asynchronous): a late answer is a latency, not
        # a lost line.
        self.logs = boto3.client(
            "logs",
            region_name=REGION,
            endpoint_url=world.endpoint,
            config=Config(read_timeout=WRITE_ANSWER_SECONDS),
        )
        self.began: dict[str, float] = {}
        self.fault_puts: list[float] = []
        """Seconds each fault line's PutLogEvents took: moto delivers to the classifier,
        which proves the line's origin and starts the execution, before it answers."""

    def create(self, instance_ids: list[str]) -> None:
        super().create(instance_ids)
        streams = [identity_stream(i) for i in instance_ids]
        with ThreadPoolExecutor(WRITERS) as pool:
            list(
                pool.map(
                    lambda s: self.logs.create_log_stream(logGroupName=self.group, logStreamName=s),
                    streams,
                )
            )

    def register(self, identities: list[NodeIdentity]) -> None:
        """Every node's registration, then a signed heartbeat ahead of any fault."""
        heartbeat = heartbeat_message({"interval": 300, "lines_read": 100})
        batches = [b for n in identities for b in n.registration]
        self.write_events(batches)
        self.write_all([(kmsg_stream(n.instance_id), [heartbeat]) for n in identities])

    def write_events(self, batches: list[tuple[str, list[tuple[int, str]]]]) -> None:
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(lambda b: self._put_events(*b), batches))

    def _put_events(self, stream: str, events: list[tuple[int, str]]) -> None:
        try:
            self.logs.put_log_events(
                logGroupName=self.group,
                logStreamName=stream,
                logEvents=[{"timestamp": at, "message": m} for at, m in events],
            )
        except Exception as exc:  # a failed write is a figure, not a crash
            self.failures.append(f"{stream}: {exc!r}")
            return
        self.sent["lines"] += len(events)
        self.sent["requests"] += 1

    def signed_faults(
        self, identities: list[NodeIdentity], lines: list[str], spread: float
    ) -> None:
        """One signed fault line per node, spread evenly over ``spread`` seconds: each node
        writes its own on time, as its agent would, however long the others' writes take
        (moto classifies a line before its PutLogEvents answers)."""
        began = time.monotonic()

        def one(index: int) -> None:
            time.sleep(max(0.0, began + spread * index / len(lines) - time.monotonic()))
            node = identities[index]
            stream = kmsg_stream(node.instance_id)
            self.began[node.instance_id] = time.time()
            at_ms = int(time.time() * 1000)
            self._put_events(stream, [(at_ms, node.signed(lines[index], at_ms))])
            self.fault_puts.append(time.time() - self.began[node.instance_id])

        with ThreadPoolExecutor(len(lines)) as pool:
            list(pool.map(one, range(len(lines))))


def identities(world: World, instance_ids: list[str]) -> list[NodeIdentity]:
    """One identity per node, for its current boot."""
    metadata = world.agents.settings.metadata
    assert metadata is not None, "the world serves no IMDS"
    encrypt = kms_encrypt(world.aws("kms"))
    boots = {i: (world.watch.latest(i) or _unseen(i)).boot_id for i in instance_ids}
    with ThreadPoolExecutor(WRITERS) as pool:
        return list(
            pool.map(
                lambda i: node_identity(i, boots[i], world.settings.name, metadata, encrypt),
                instance_ids,
            )
        )


def _unseen(instance_id: str) -> Any:
    raise RuntimeError(f"the watch never saw the Node of {instance_id}")
