"""``nodemedic agent``: argument parsing and start-up checks.

Every knob has a documented default that suits a production node; the local mode and the
tests override the endpoint, identity, kernel log source and timings.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from agent.argtypes import count, metric_prefix, on_off, seconds
from agent.batch import MAX_BATCH_EVENTS
from agent.checks import names, options
from agent.config import Config
from agent.deepcheck.tools import OPTIONS as DEEP_CHECK_OPTIONS
from agent.poddevices import SERVICE_ACCOUNT, Kube, Publisher, start
from agent.podresources import SOCKET
from nodemedic.contracts.env import ENV_CLUSTER

DEFAULT_METRICS_PORT = 9810
"""Unlike ``Config`` (which binds any free port, for tests and the local world), a node
agent serves its metrics where Prometheus is told to look."""
MIN_SPOOL_BYTES = 8 * 1024 * 1024


def _defaults() -> dict[str, Any]:
    """The flags' defaults are the agent's own, so the two cannot drift apart; read when a
    parser is built, so that ``--checks`` defaults to the checks listed then."""
    return {
        f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(Config)
    }


def configure_agent(parser: argparse.ArgumentParser) -> None:
    defaults = _defaults()
    where = parser.add_argument_group("where to ship")
    where.add_argument(
        "--cluster",
        default=os.environ.get(ENV_CLUSTER),
        help="cluster name; logs go to /nodemedic/<cluster>/nodes (default: $NODEMEDIC_CLUSTER)",
    )
    where.add_argument(
        "--instance-id",
        help="EC2 instance id; names the streams <id>/kmsg and <id>/health (default: IMDSv2)",
    )
    where.add_argument("--region", help="region of the log group (default: IMDSv2)")
    where.add_argument(
        "--instance-type",
        default="",
        help="EC2 instance type; says how many GPUs and Neuron devices to expect (default: "
        "IMDSv2 when it gives the identity too; none: the counts are unchecked)",
    )
    where.add_argument("--endpoint-url", help="CloudWatch Logs endpoint (moto in local mode)")
    where.add_argument(
        "--create-log-group",
        action="store_true",
        help="create the log group if missing (local mode; the stack owns it)",
    )
    where.add_argument(
        "--no-sign",
        dest="sign",
        action="store_false",
        help="ship events unsigned (off EC2); a cluster enforcing proof_of_origin then only "
        "notifies this node's faults (default: sign every event with a per-boot key "
        "registered with the instance identity document)",
    )
    source = parser.add_argument_group("kernel log")
    source.add_argument(
        "--kmsg",
        default=defaults["kmsg"],
        help="/dev/kmsg, or an existing file of kmsg records or plain lines to follow like "
        "tail -f (default: %(default)s)",
    )
    source.add_argument(
        "--boot-id",
        help="boot id kept with the checkpoint; a new one reads the kernel log from its start "
        "(default: read from --boot-id-file)",
    )
    source.add_argument(
        "--boot-id-file", default="/proc/sys/kernel/random/boot_id", help="(default: %(default)s)"
    )
    source.add_argument(
        "--pstore-dir",
        type=Path,
        default=defaults["pstore_dir"],
        help="pstore mount whose dmesg/console records of the boot that died are shipped once, "
        "marked previous-boot, and never deleted (default: %(default)s)",
    )
    state = parser.add_argument_group("state and shipping")
    state.add_argument(
        "--state-dir",
        type=Path,
        default=Path("/var/lib/nodemedic"),
        help="checkpoint, spool and counter baselines (default: %(default)s)",
    )
    state.add_argument(
        "--spool-max-bytes",
        type=int,
        default=defaults["spool_max_bytes"],
        help="bound of the on-disk spool; the oldest batches go first (default: 256 MiB)",
    )
    state.add_argument(
        "--flush-interval",
        type=float,
        default=defaults["flush_interval"],
        help="longest a line waits before its batch is sent, seconds, at most 1 "
        "(default: %(default)s)",
    )
    state.add_argument(
        "--max-batch-events",
        type=int,
        default=defaults["max_batch_events"],
        help="events per PutLogEvents call, at most 10000 (default: %(default)s)",
    )
    state.add_argument(
        "--memory-batches",
        type=int,
        default=defaults["memory_batches"],
        help="batches kept in memory before spooling to disk (default: %(default)s)",
    )
    state.add_argument(
        "--retry-base-delay",
        type=seconds,
        default=defaults["retry_base_delay"],
        help="first backoff step, seconds (default: %(default)s)",
    )
    state.add_argument(
        "--retry-max-delay",
        type=seconds,
        default=defaults["retry_max_delay"],
        help="longest backoff, seconds (default: %(default)s)",
    )
    state.add_argument(
        "--register-retry",
        type=seconds,
        default=defaults["register_retry"],
        help="seconds between tries to register the signing key after one failed; events "
        "ship unsigned meanwhile (default: %(default)s)",
    )
    state.add_argument(
        "--register-interval",
        type=seconds,
        default=defaults["register_interval"],
        help="seconds between two registrations of the same signing key, well inside the "
        "log group's retention (default: %(default)s)",
    )
    state.add_argument(
        "--shutdown-grace",
        type=seconds,
        default=defaults["shutdown_grace"],
        help="seconds to keep shipping after SIGTERM before spooling the rest "
        "(default: %(default)s)",
    )
    state.add_argument(
        "--heartbeat-interval",
        type=seconds,
        default=defaults["heartbeat_interval"],
        help="seconds between heartbeat lines; nodemedic reports a Ready node silent after "
        "three intervals without one (default: %(default)s)",
    )
    state.add_argument(
        "--stall-grace",
        type=seconds,
        default=defaults["stall_grace"],
        help="seconds a loop may be late beyond three of its turns before /livez fails "
        "(default: %(default)s)",
    )
    checks = parser.add_argument_group("health checks")
    checks.add_argument(
        "--checks",
        default=",".join(defaults["checks"]),
        help="comma-separated, empty for none (default: %(default)s)",
    )
    checks.add_argument(
        "--check-interval",
        type=seconds,
        default=defaults["check_interval"],
        help="seconds between runs; they also run at start-up (default: %(default)s)",
    )
    for option in options():
        checks.add_argument(
            option.flag, type=option.parse, default=option.default, help=option.help
        )
    checks.add_argument(
        "--sys-root",
        type=Path,
        default=defaults["sys_root"],
        help="where the host's sysfs is mounted (default: %(default)s)",
    )
    deep = parser.add_argument_group("deep health check (agent.deepcheck)")
    deep.add_argument(
        "--deep-check",
        action="store_true",
        help="run the deep check now, print and ship its results to <id>/deep-check, and exit: "
        "0 passed, 1 failed, 3 nothing could be checked",
    )
    deep.add_argument(
        "--deep-check-at-start",
        action="store_true",
        default=defaults["deep_check_at_start"],
        help="run the deep check once per boot when the agent starts (the DaemonSet sets it)",
    )
    for option in DEEP_CHECK_OPTIONS:
        deep.add_argument(option.flag, type=option.parse, default=option.default, help=option.help)
    pods = parser.add_argument_group("device record (agent.poddevices)")
    pods.add_argument(
        "--pod-devices",
        action="store_true",
        help="publish which pod holds which device (the kubelet's PodResources) on this "
        "node's Node, so that a GPU reset drains only its pods; needs --node-name and the "
        "pod's service-account token (default: off)",
    )
    pods.add_argument(
        "--node-name",
        default=os.environ.get("NODE_NAME", ""),
        help="this node's name in Kubernetes (default: $NODE_NAME)",
    )
    pods.add_argument(
        "--pod-resources-socket",
        default=SOCKET,
        help="the kubelet's PodResources socket (default: %(default)s)",
    )
    pods.add_argument(
        "--kube-credentials",
        type=Path,
        default=SERVICE_ACCOUNT,
        help="folder of the service-account token and ca.crt (default: %(default)s)",
    )
    ops = parser.add_argument_group("operations")
    ops.add_argument(
        "--metrics-address",
        default=defaults["metrics_address"],
        help="Prometheus endpoint address (default: %(default)s)",
    )
    ops.add_argument(
        "--metrics-port",
        type=count,
        default=DEFAULT_METRICS_PORT,
        help="Prometheus endpoint port, 0 for none; one agent per port (default: %(default)s)",
    )
    ops.add_argument(
        "--telemetry-emf",
        action="store_true",
        default=defaults["telemetry_emf"],
        help="ship GPU and Neuron telemetry as CloudWatch metrics (EMF lines on "
        "<id>/telemetry, every --check-interval); custom metrics cost money, see "
        "docs/telemetry.md (default: off)",
    )
    ops.add_argument(
        "--dcgm-names",
        type=on_off,
        default=defaults["dcgm_names"],
        metavar="on|off",
        help="off where dcgm-exporter runs too: no DCGM_FI_DEV_* names on /metrics (default: on)",
    )
    ops.add_argument(
        "--metric-prefix",
        type=metric_prefix,
        default=defaults["metric_prefix"],
        help="put before each DCGM_FI_DEV_* name on /metrics, e.g. nodemedic_ (default: none)",
    )
    ops.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="the agent's own log, on stderr (default: %(default)s)",
    )


def _fail(message: str) -> int:
    print(f"nodemedic agent: {message}", file=sys.stderr)
    return 2


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, if anything (checked before touching the node)."""
    known = names()
    unknown = {c for c in args.checks.split(",") if c} - set(known)
    problems = [
        (not args.cluster, "--cluster is required (or set NODEMEDIC_CLUSTER)"),
        (not 0 < args.flush_interval <= 1, "--flush-interval must be in (0, 1] seconds"),
        (
            not 1 <= args.max_batch_events <= MAX_BATCH_EVENTS,
            f"--max-batch-events must be in 1..{MAX_BATCH_EVENTS}",
        ),
        (
            args.spool_max_bytes < MIN_SPOOL_BYTES,
            f"--spool-max-bytes must be at least {MIN_SPOOL_BYTES} (8 MiB)",
        ),
        (
            bool(unknown),
            f"unknown check(s) {', '.join(sorted(unknown))}; known: {', '.join(known)}",
        ),
        (not Path(args.kmsg).exists(), f"{args.kmsg} does not exist"),
        (args.pod_devices and not args.node_name, "--pod-devices needs --node-name or NODE_NAME"),
        (
            args.pod_devices and not os.environ.get("KUBERNETES_SERVICE_HOST"),
            "--pod-devices needs KUBERNETES_SERVICE_HOST, as Kubernetes sets it in a pod",
        ),
    ]
    return next((message for failed, message in problems if failed), None)


def _identity(args: argparse.Namespace) -> tuple[str, str, str]:
    """(instance id, region, boot id); raises IdentityError or OSError. Where IMDS gives
    the identity it gives ``args.instance_type`` too, unless the flag did."""
    from agent.imds import instance_identity, instance_type

    instance_id, region = args.instance_id, args.region
    if not (instance_id and region):
        found_id, found_region = instance_identity()
        instance_id, region = instance_id or found_id, region or found_region
        args.instance_type = args.instance_type or instance_type()
    boot_id = args.boot_id or Path(args.boot_id_file).read_text(encoding="ascii").strip()
    return instance_id, region, boot_id


def agent_config(args: argparse.Namespace, instance_id: str, region: str, boot_id: str) -> Config:
    """``Config`` from the parsed flags: each field from the flag of its name, the checks'
    own options from the registry; identity as found (flags, IMDS, the boot id file)."""
    given = vars(args)
    fields = {f.name: given[f.name] for f in dataclasses.fields(Config) if f.name in given}
    fields.update(
        instance_id=instance_id,
        region=region,
        boot_id=boot_id,
        memory_batches=max(1, args.memory_batches),
        checks=tuple(c for c in args.checks.split(",") if c),
        check_options={
            option.dest: given[option.dest] for option in (*options(), *DEEP_CHECK_OPTIONS)
        },
    )
    return Config(**fields)


def run_agent(args: argparse.Namespace) -> int:
    from agent.imds import IdentityError
    from agent.main import Agent

    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    problem = _problem(args)
    if problem:
        return _fail(problem)
    # Before anything slow: a SIGTERM during start-up is a clean stop too.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        agent = Agent(agent_config(args, *_identity(args)))
    except (IdentityError, OSError, ValueError) as exc:
        return _fail(str(exc))
    if args.deep_check:
        results = agent.deep_check_once()
        for result in results:
            print(result.to_json())
        return DEEP_CHECK_EXIT[results[-1].reason]
    if args.pod_devices:
        publisher = Publisher(
            args.node_name,
            Kube.in_cluster(args.kube_credentials),
            args.nvidia_smi,
            args.pod_resources_socket,
        )
        start(publisher, stop)
    agent.run(stop)
    return 0


DEEP_CHECK_EXIT = {"Passed": 0, "Failed": 1, "NothingChecked": 3}
