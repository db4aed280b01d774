"""The deep check as the agent runs it: at most once per boot at start-up (an agent
restarted on the same boot must not load the node's GPUs again under a job), and on demand.
Its lines go to the deep check stream; the boot counts as checked only once they are safe
(shipped or spooled), so a stop before that runs it again on the next start."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from agent.batch import Batch, Batcher, add_all
from agent.checkpoint import write_atomically
from agent.checks import efa, neuron, nvidia
from agent.checks.base import utc_stamp
from agent.config import Config
from agent.deepcheck import Node
from agent.deepcheck import run as run_deep_check
from nodemedic.health.result import Result

log = logging.getLogger(__name__)
DEEP_CHECK_MARK = "deep-check-boot"
"""In the state directory: the boot id whose deep check results are safe."""
KEY_TRIES = 3
"""Registration tries (the first and its retries, ``register_retry`` apart) the start-up
deep check waits for before it ships unsigned."""


def deep_check_node(config: Config, now: datetime) -> Node:
    """What the deep check knows of this node: the device counts its checks expect."""
    options = config.check_options
    return Node(
        ts=utc_stamp(now),
        sys_root=config.sys_root,
        state_dir=config.state_dir,
        boot_id=config.boot_id,
        instance_type=config.instance_type,
        expected_gpus=nvidia.expected_gpus(config),
        expected_neuron_devices=neuron.expected_devices(config),
        expected_efa_devices=efa.EXPECT_DEVICES.value(options),
        options=options,
    )


def checked_this_boot(config: Config) -> bool:
    mark = config.state_dir / DEEP_CHECK_MARK
    try:
        return mark.read_text(encoding="ascii").strip() == config.boot_id
    except OSError:
        return False


def deep_check(config: Config, batcher: Batcher, put: Callable[[Batch], None]) -> list[Result]:
    """Run the deep check and ``put`` its lines, batched by ``batcher`` (the deep check
    stream's); the last batch marks the boot checked once it is safe."""
    log.info("deep check started")
    results = run_deep_check(deep_check_node(config, datetime.now(UTC)))
    now_ms = int(time.time() * 1000)
    last = add_all(batcher, now_ms, (result.to_json() for result in results), put)
    if last is not None:
        mark = config.state_dir / DEEP_CHECK_MARK
        last.on_safe = functools.partial(write_atomically, mark, config.boot_id.encode("ascii"))
        put(last)
    log.info("deep check: %s", results[-1].to_json())
    return results


def once_keyed(config: Config, keyed: Callable[[float], bool], check: Callable[[], object]) -> None:
    """The start-up deep check, once this boot's key is registered. Its verdict admits the
    node only if signed where proof of origin is enforced, and the boot counts as checked
    once its lines are safe, so a verdict shipped unsigned (IMDS or KMS slow at boot) would
    hold a good node out for ever. After ``KEY_TRIES`` tries it ships as every line does."""
    if config.sign and not keyed(KEY_TRIES * config.register_retry):
        log.warning("no key registered: the deep check ships unsigned")
    check()
