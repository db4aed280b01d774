"""What one agent runs with: its identity and every tunable, with the defaults a node uses.

Kept apart from ``agent.main`` so that the command line takes its defaults from here
without importing the agent itself. The health checks' own settings are not fields: each
check module declares its options (``agent.checks.registry``), and their values travel
in ``check_options``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.batch import DEFAULT_BATCH_EVENTS
from agent.checks import names as check_names
from agent.healthship import HEALTHY_EVERY
from agent.origin import REGISTER_INTERVAL
from nodemedic.contracts.logs import HEARTBEAT_SECONDS


@dataclass
class Config:
    cluster: str
    instance_id: str
    region: str
    boot_id: str
    state_dir: Path
    instance_type: str = ""
    """EC2's name for the node's type; says how many GPUs and Neuron devices the checks
    expect (``nodemedic.health.instance_types``). Empty: unknown, nothing expected."""
    kmsg: str = "/dev/kmsg"
    endpoint_url: str | None = None
    create_log_group: bool = False
    flush_interval: float = 1.0
    max_batch_events: int = DEFAULT_BATCH_EVENTS
    memory_batches: int = 1
    spool_max_bytes: int = 256 * 1024 * 1024
    checks: tuple[str, ...] = field(default_factory=check_names)
    check_interval: float = 60.0
    healthy_every: float = HEALTHY_EVERY
    """Seconds between two shipments of a healthy result that did not change; a result that
    is not ``ok``, or changed, ships every run (``agent.healthship``)."""
    check_options: Mapping[str, object] = field(default_factory=dict)
    """The checks' option values by ``Option.dest``; one left out takes its default."""
    pstore_dir: Path = Path("/sys/fs/pstore")
    """Where the crashed boot's last kernel log records are kept (``agent.pstore``)."""
    sign: bool = True
    """Sign every event and register the key with the instance identity document
    (``agent.origin``); ``--no-sign`` for hosts off EC2 and agents of clusters in audit."""
    register_retry: float = 60.0
    """Seconds between tries to register the key after one failed (no identity document,
    KMS or the network away); events ship unsigned until one succeeds."""
    register_interval: float = REGISTER_INTERVAL
    """Seconds between two registrations of the same key while the agent runs, so that one
    is always younger than the log group's retention (``agent.origin.REGISTER_INTERVAL``)."""
    sys_root: Path = Path("/sys")
    deep_check_at_start: bool = False
    """Run the deep check (``agent.deepcheck``) once per boot when the agent starts; the
    DaemonSet turns it on, so a new or rebooted node is checked before it takes work."""
    telemetry_emf: bool = False
    """Ship the accelerators' telemetry as CloudWatch metrics (Embedded Metric Format lines on
    ``<instance-id>/telemetry``, one set per check run): off, since each GPU, NeuronCore and
    Neuron device adds custom metrics that cost money (docs/telemetry.md)."""
    dcgm_names: bool = True
    """Export the GPU telemetry under dcgm-exporter's ``DCGM_FI_DEV_*`` names on ``/metrics``;
    off where dcgm-exporter already runs on the node (the GPU Operator), so that a dashboard's
    ``sum()`` does not count each GPU twice."""
    metric_prefix: str = ""
    """Put before each ``DCGM_FI_DEV_*`` name on ``/metrics`` (``nodemedic_``): the agent's
    series beside dcgm-exporter's, told apart by name."""
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 0
    retry_base_delay: float = 0.2
    retry_max_delay: float = 30.0
    shutdown_grace: float = 5.0
    heartbeat_interval: float = float(HEARTBEAT_SECONDS)
    """Seconds between heartbeat lines; the reconcile reports a Ready node silent after
    three intervals without one (``SILENT_AFTER_BEATS``)."""
    stall_grace: float = 60.0
    """Seconds a loop may be late beyond three of its turns before the liveness probe
    fails (``agent.liveness``)."""
