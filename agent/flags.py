"""The flags of ``nodemedic agent`` as one table, group by group, in the order ``--help``
shows them.

A flag's default is the agent's own where it names its ``Config`` field (``config``), so
the two cannot drift apart; one read from the environment (``env``) is read when the parser
is built. The health checks and the deep check add their own options where the table says
(``agent.checks.options``, ``agent.deepcheck.tools.OPTIONS``): a check's option lives with
its check.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from agent.argtypes import count, metric_prefix, on_off, seconds
from agent.checks import options
from agent.checks.registry import Option
from agent.config import Config
from agent.deepcheck.tools import OPTIONS as DEEP_CHECK_OPTIONS
from agent.poddevices import SERVICE_ACCOUNT
from agent.podresources import SOCKET
from nodemedic.contracts.env import ENV_CLUSTER

DEFAULT_METRICS_PORT = 9810
"""Unlike ``Config`` (which binds any free port, for tests and the local world), a node
agent serves its metrics where Prometheus is told to look."""


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag: argparse's words for it, and where its default comes from."""

    name: str
    help: str
    config: str = ""
    """The ``Config`` field whose default is this flag's (a list as the comma-separated
    text the flag takes)."""
    env: str = ""
    """The environment variable whose value, where set, is the default."""
    default: Any = None
    type: Callable[[str], Any] | None = None
    action: str | None = None
    dest: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None

    def add_to(self, group: argparse._ArgumentGroup, defaults: Mapping[str, Any]) -> None:
        words: dict[str, Any] = {
            key: value
            for key, value in (
                ("type", self.type),
                ("action", self.action),
                ("dest", self.dest),
                ("metavar", self.metavar),
                ("choices", self.choices),
            )
            if value is not None
        }
        default = self.default
        if self.config:
            default = defaults[self.config]
            default = ",".join(default) if isinstance(default, list | tuple) else default
        if self.env:
            default = os.environ.get(self.env, default)
        if default is not None or self.action is None:
            words["default"] = default
        group.add_argument(self.name, help=self.help, **words)


Options = Callable[[], Iterable[Option[Any]]]
"""Where a group takes the options its checks declare."""
Group = tuple[str, tuple[Flag | Options, ...]]

GROUPS: tuple[Group, ...] = (
    (
        "where to ship",
        (
            Flag(
                "--cluster",
                "cluster name; logs go to /nodemedic/<cluster>/nodes (default: $NODEMEDIC_CLUSTER)",
                env=ENV_CLUSTER,
            ),
            Flag(
                "--instance-id",
                "EC2 instance id; names the streams <id>/kmsg and <id>/health (default: IMDSv2)",
            ),
            Flag("--region", "region of the log group (default: IMDSv2)"),
            Flag(
                "--instance-type",
                "EC2 instance type; says how many GPUs and Neuron devices to expect (default: "
                "IMDSv2 when it gives the identity too; none: the counts are unchecked)",
                default="",
            ),
            Flag("--endpoint-url", "CloudWatch Logs endpoint (moto in local mode)"),
            Flag(
                "--create-log-group",
                "create the log group if missing (local mode; the stack owns it)",
                action="store_true",
            ),
            Flag(
                "--no-sign",
                "ship events unsigned (off EC2); a cluster enforcing proof_of_origin then only "
                "notifies this node's faults (default: sign every event with a per-boot key "
                "registered with the instance identity document)",
                dest="sign",
                action="store_false",
            ),
        ),
    ),
    (
        "kernel log",
        (
            Flag(
                "--kmsg",
                "/dev/kmsg, or an existing file of kmsg records or plain lines to follow like "
                "tail -f (default: %(default)s)",
                config="kmsg",
            ),
            Flag(
                "--boot-id",
                "boot id kept with the checkpoint; a new one reads the kernel log from its "
                "start (default: read from --boot-id-file)",
            ),
            Flag(
                "--boot-id-file",
                "(default: %(default)s)",
                default="/proc/sys/kernel/random/boot_id",
            ),
            Flag(
                "--pstore-dir",
                "pstore mount whose dmesg/console records of the boot that died are shipped "
                "once, marked previous-boot, and never deleted (default: %(default)s)",
                config="pstore_dir",
                type=Path,
            ),
        ),
    ),
    (
        "state and shipping",
        (
            Flag(
                "--state-dir",
                "checkpoint, spool and counter baselines (default: %(default)s)",
                default=Path("/var/lib/nodemedic"),
                type=Path,
            ),
            Flag(
                "--spool-max-bytes",
                "bound of the on-disk spool; the oldest batches go first (default: 256 MiB)",
                config="spool_max_bytes",
                type=int,
            ),
            Flag(
                "--flush-interval",
                "longest a line waits before its batch is sent, seconds, at most 1 "
                "(default: %(default)s)",
                config="flush_interval",
                type=float,
            ),
            Flag(
                "--max-batch-events",
                "events per PutLogEvents call, at most 10000 (default: %(default)s)",
                config="max_batch_events",
                type=int,
            ),
            Flag(
                "--memory-batches",
                "batches kept in memory before spooling to disk (default: %(default)s)",
                config="memory_batches",
                type=int,
            ),
            Flag(
                "--retry-base-delay",
                "first backoff step, seconds (default: %(default)s)",
                config="retry_base_delay",
                type=seconds,
            ),
            Flag(
                "--retry-max-delay",
                "longest backoff, seconds (default: %(default)s)",
                config="retry_max_delay",
                type=seconds,
            ),
            Flag(
                "--register-retry",
                "seconds between tries to register the signing key after one failed; events "
                "ship unsigned meanwhile (default: %(default)s)",
                config="register_retry",
                type=seconds,
            ),
            Flag(
                "--register-interval",
                "seconds between two registrations of the same signing key, well inside the "
                "log group's retention (default: %(default)s)",
                config="register_interval",
                type=seconds,
            ),
            Flag(
                "--shutdown-grace",
                "seconds to keep shipping after SIGTERM before spooling the rest "
                "(default: %(default)s)",
                config="shutdown_grace",
                type=seconds,
            ),
            Flag(
                "--heartbeat-interval",
                "seconds between heartbeat lines; nodemedic reports a Ready node silent after "
                "three intervals without one (default: %(default)s)",
                config="heartbeat_interval",
                type=seconds,
            ),
            Flag(
                "--stall-grace",
                "seconds a loop may be late beyond three of its turns before /livez fails "
                "(default: %(default)s)",
                config="stall_grace",
                type=seconds,
            ),
        ),
    ),
    (
        "health checks",
        (
            Flag(
                "--checks",
                "comma-separated, empty for none (default: %(default)s)",
                config="checks",
            ),
            Flag(
                "--check-interval",
                "seconds between runs; they also run at start-up (default: %(default)s)",
                config="check_interval",
                type=seconds,
            ),
            Flag(
                "--healthy-every",
                "seconds between two shipments of a healthy result that did not change; "
                "others ship every run (default: %(default)s)",
                config="healthy_every",
                type=seconds,
            ),
            options,
            Flag(
                "--sys-root",
                "where the host's sysfs is mounted (default: %(default)s)",
                config="sys_root",
                type=Path,
            ),
        ),
    ),
    (
        "deep health check (agent.deepcheck)",
        (
            Flag(
                "--deep-check",
                "run the deep check now, print and ship its results to <id>/deep-check, and "
                "exit: 0 passed, 1 failed, 3 nothing could be checked",
                action="store_true",
            ),
            Flag(
                "--deep-check-at-start",
                "run the deep check once per boot when the agent starts (the DaemonSet sets it)",
                config="deep_check_at_start",
                action="store_true",
            ),
            lambda: DEEP_CHECK_OPTIONS,
        ),
    ),
    (
        "device record (agent.poddevices)",
        (
            Flag(
                "--pod-devices",
                "publish which pod holds which device (the kubelet's PodResources) on this "
                "node's Node, so that a GPU reset drains only its pods; needs --node-name and "
                "the pod's service-account token (default: off)",
                action="store_true",
            ),
            Flag(
                "--node-name",
                "this node's name in Kubernetes (default: $NODE_NAME)",
                env="NODE_NAME",
                default="",
            ),
            Flag(
                "--pod-resources-socket",
                "the kubelet's PodResources socket (default: %(default)s)",
                default=SOCKET,
            ),
            Flag(
                "--kube-credentials",
                "folder of the service-account token and ca.crt (default: %(default)s)",
                default=SERVICE_ACCOUNT,
                type=Path,
            ),
        ),
    ),
    (
        "operations",
        (
            Flag(
                "--metrics-address",
                "Prometheus endpoint address (default: %(default)s)",
                config="metrics_address",
            ),
            Flag(
                "--metrics-port",
                "Prometheus endpoint port, 0 for none; one agent per port (default: %(default)s)",
                default=DEFAULT_METRICS_PORT,
                type=count,
            ),
            Flag(
                "--telemetry-emf",
                "ship GPU and Neuron telemetry as CloudWatch metrics (EMF lines on "
                "<id>/telemetry, every --check-interval); custom metrics cost money, see "
                "docs/telemetry.md (default: off)",
                config="telemetry_emf",
                action="store_true",
            ),
            Flag(
                "--dcgm-names",
                "off where dcgm-exporter runs too: no DCGM_FI_DEV_* names on /metrics "
                "(default: on)",
                config="dcgm_names",
                type=on_off,
                metavar="on|off",
            ),
            Flag(
                "--metric-prefix",
                "put before each DCGM_FI_DEV_* name on /metrics, e.g. nodemedic_ (default: none)",
                config="metric_prefix",
                type=metric_prefix,
            ),
            Flag(
                "--log-level",
                "the agent's own log, on stderr (default: %(default)s)",
                default="INFO",
                choices=("DEBUG", "INFO", "WARNING", "ERROR"),
            ),
        ),
    ),
)
"""Every flag of ``nodemedic agent``, by the group ``--help`` shows it in."""


def config_defaults() -> dict[str, Any]:
    """The agent's own defaults, read when a parser is built, so that ``--checks`` defaults
    to the checks listed then."""
    return {
        f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(Config)
    }


def add_flags(parser: argparse.ArgumentParser) -> None:
    defaults = config_defaults()
    for title, entries in GROUPS:
        group = parser.add_argument_group(title)
        for entry in entries:
            if isinstance(entry, Flag):
                entry.add_to(group, defaults)
                continue
            for option in entry():
                group.add_argument(
                    option.flag, type=option.parse, default=option.default, help=option.help
                )
