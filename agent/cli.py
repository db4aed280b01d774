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

from agent.batch import MAX_BATCH_EVENTS
from agent.checks import names, options
from agent.config import Config
from agent.deepcheck.tools import OPTIONS as DEEP_CHECK_OPTIONS
from agent.flags import add_flags
from agent.poddevices import Kube, Publisher, start

MIN_SPOOL_BYTES = 8 * 1024 * 1024


def configure_agent(parser: argparse.ArgumentParser) -> None:
    """The agent's flags, from their table (``agent.flags.GROUPS``)."""
    add_flags(parser)


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
