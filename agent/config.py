"""What one agent runs with: its identity and every tunable, with the defaults a node uses.

Kept apart from ``agent.main`` so that the command line takes its defaults from here
without importing the agent itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.batch import DEFAULT_BATCH_EVENTS

CHECKS = ("nvidia", "neuron", "efa")


@dataclass
class Config:
    cluster: str
    instance_id: str
    region: str
    boot_id: str
    state_dir: Path
    kmsg: str = "/dev/kmsg"
    endpoint_url: str | None = None
    create_log_group: bool = False
    flush_interval: float = 1.0
    max_batch_events: int = DEFAULT_BATCH_EVENTS
    memory_batches: int = 1
    spool_max_bytes: int = 256 * 1024 * 1024
    checks: tuple[str, ...] = CHECKS
    check_interval: float = 60.0
    nvidia_smi: str = "nvidia-smi -q -x"
    nvidia_smi_timeout: float = 60.0
    expect_gpus: int = 0
    expect_neuron_devices: int = 0
    expect_efa_devices: int = 0
    sys_root: Path = Path("/sys")
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 0
    retry_base_delay: float = 0.2
    retry_max_delay: float = 30.0
    shutdown_grace: float = 5.0
