"""How full the agent's PutLogEvents requests are next to watchtower's (the usual Python
CloudWatch Logs handler), the same lines through each with its defaults: requests per 1,000
lines, events and bytes per request against the service's 10,000-event and 1,048,576-byte
limits, counted as the service counts them. ``bench/agent.py`` runs it beside its other
measures of the agent."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from agent.batch import EVENT_OVERHEAD, MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from agent.config import Config
from agent.main import Agent, logs_client
from nodemedic.contracts.logs import kmsg_stream

Fill = list[tuple[int, int]]
"""(events, bytes as the service counts them) of each PutLogEvents call."""


def count_puts(client: Any) -> Fill:
    """Every PutLogEvents call ``client`` makes, as the service counts it: UTF-8 bytes of
    each message plus 26 per event (the 1,048,576-byte limit's arithmetic)."""
    calls: Fill = []

    def record(params: dict[str, Any], **_: Any) -> None:
        events = list(params["logEvents"])
        params["logEvents"] = events
        size = sum(len(e["message"].encode()) + EVENT_OVERHEAD for e in events)
        calls.append((len(events), size))

    client.meta.events.register("provide-client-params.logs.PutLogEvents", record)
    return calls


def nodemedic_fill(directory: Path, endpoint: str, region: str, lines: list[str]) -> Fill:
    """The agent in-process following a file that holds ``lines``, with its defaults."""
    kmsg = directory / "kmsg"
    kmsg.write_text("".join(f"{line}\n" for line in lines))
    config = Config(
        cluster="bench", instance_id="i-0nodemedic", region=region, boot_id="bench",
        state_dir=directory / "state", kmsg=str(kmsg), endpoint_url=endpoint,
        create_log_group=True, checks=(), sign=False,
    )  # fmt: skip
    client = logs_client(region, endpoint)
    calls = count_puts(client)
    agent = Agent(config, client=client)
    stop = threading.Event()
    runner = threading.Thread(target=agent.run, args=(stop,))
    runner.start()
    stream = kmsg_stream(config.instance_id)
    while agent.metrics.events_shipped[stream] < len(lines):
        time.sleep(0.01)
    stop.set()
    runner.join()
    return calls


def watchtower_fill(endpoint: str, region: str, lines: list[str]) -> Fill:
    """watchtower (the usual Python CloudWatch Logs handler) with its defaults, the same
    lines logged at once."""
    import boto3
    import watchtower

    client = boto3.client("logs", endpoint_url=endpoint, region_name=region)
    calls = count_puts(client)
    handler: Any = watchtower.CloudWatchLogHandler(
        log_group_name="/nodemedic/bench/watchtower",
        log_stream_name="i-0watchtower/kmsg",
        boto3_client=client,
        create_log_group=True,
    )
    logger = logging.getLogger("bench.watchtower")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    for line in lines:
        logger.info(line)
    handler.flush()
    handler.close()
    return calls


def fill_report(label: str, calls: Fill, lines: int) -> str:
    events = sum(n for n, _ in calls)
    size = sum(b for _, b in calls)
    return (
        f"  {label:<10} {events:,} events for {lines:,} lines in {len(calls):4d} requests, "
        f"{len(calls) / lines * 1000:5.2f} per 1,000 "
        f"lines; {events / len(calls):7,.0f} events ({events / len(calls) / MAX_BATCH_EVENTS:4.0%} "
        f"of {MAX_BATCH_EVENTS:,}) and {size / len(calls):9,.0f} bytes "
        f"({size / len(calls) / MAX_BATCH_BYTES:4.0%} of {MAX_BATCH_BYTES:,}) per request; "
        f"fullest {max(n for n, _ in calls):,} events, {max(b for _, b in calls):,} bytes"
    )
