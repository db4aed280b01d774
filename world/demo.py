"""``nodemedic demo``: the whole pipeline end to end on this machine, with no AWS account.

Starts the local world (``world.start``), injects faults with ``nodemedic
inject``, shows each one's timeline as it happens, then the final state of the cluster
and of AWS. The exit code is 0 only if every fault had its expected outcome. Every
process it started is stopped on the way out, also on Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from world.terminal import chatter_to, copy_of

# The scenarios, the world and the dashboard page load inside the functions that use them,
# not here: they bring moto, kubernetes and the CDK (seconds), and importing this module,
# which the CLI does by name (``console/cli``), stays as cheap as the terminal helpers.
# They are no way around a cycle: nothing in world/ imports this module.
if TYPE_CHECKING:
    from world.world import World

Say = Callable[[str], None]

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
SCENARIO_NAMES = (
    "default",
    "hyperpod",
    "jobs",
    "karpenter",
    "lifecycle",
    "planned",
    "reboot",
    "reset",
    "spread",
    "storm",
)
"""``world.scenarios.registry.SCENARIOS``' names, for ``--help`` and ``--scenario``'s choices
without
loading the scenarios (seconds: moto, kubernetes, the CDK); a unit test holds the two equal."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        choices=SCENARIO_NAMES,
        default="default",
        help="default: one Neuron DMA error, Xid 48, a benign line, Xid 13; storm: 60%% "
        "of the nodes fail at once; spread: one failure after another, past the hourly "
        "replacement limit, trips the breaker, which recovers; jobs: simulated training "
        "watched with HyperPod's rules, and a node replaced under an opted-in job; "
        "lifecycle: deep checks gate new and rebooted nodes, a spare, a label-driven "
        "replace, the history; planned: an AWS Health retirement notice replaced before "
        "its deadline, and a replacement approved with `nodemedic approve`; reset: an Xid "
        "46's GPU reset through SSM, only its GPU's pod drained, the node given back without a "
        "reboot; hyperpod: the nodes of a SageMaker HyperPod cluster, an Xid 48 rebooted and "
        "an Xid 79 replaced through HyperPod's batch calls; karpenter: the training workers "
        "on nodes the real Karpenter controller launched, an Xid 79's NodeClaim deleted and "
        "replaced by Karpenter; reboot: a p5, a g6 and a trn1 rebooted with the chart's "
        "defaults and the default image, each node's timeline to back in service "
        "(default: %(default)s)",
    )
    parser.add_argument("--nodes", type=int, default=8, help="nodes (default: %(default)s)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the results as JSON on stdout (progress goes to stderr)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep the world's files (logs of every process) here; default: a temporary "
        "directory, removed at the end",
    )


class _Terminated(BaseException):
    """SIGTERM: unwind like Ctrl-C, stopping everything on the way."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def run(args: argparse.Namespace) -> int:
    from world.kube.chart import ChartError

    # Copies of the terminal's descriptors: while the world runs, what its parts print
    # (handler logs, moto's notes) goes to its log file instead (``chatter_to``).
    out = copy_of(sys.stderr if args.json else sys.stdout)
    results = copy_of(sys.stdout)

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    if args.nodes < 4:
        say("nodemedic demo: --nodes must be at least 4")
        return 2
    if args.workdir is not None and args.workdir.exists() and any(args.workdir.iterdir()):
        say(f"nodemedic demo: {args.workdir} is not empty (it would hold a fresh world)")
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.workdir is not None:
            return _demo(args, args.workdir, say, results)
        with tempfile.TemporaryDirectory(prefix="nodemedic-demo-") as workdir:
            return _demo(args, Path(workdir), say, results)
    except ChartError as exc:
        # The agents run the chart's flags, as a user's install does: no chart, no demo.
        say(f"nodemedic demo: the agents' flags come from the Helm chart: {exc}")
        return 2
    except (KeyboardInterrupt, _Terminated):
        say("nodemedic demo: interrupted; everything it started is stopped")
        # Ctrl-C also ended the CDK's Node.js process (it shares our process group), and
        # the jsii runtime's exit hook prints a broken-pipe traceback about it.
        with Path(os.devnull).open("wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _dashboard(world: World, workdir: Path, *, since: float) -> str:
    """The cluster's CloudWatch dashboard as moto holds it, drawn since the demo began at
    a point every 10 s (the demo lasts minutes); kept after a temporary workdir is gone.
    A page that cannot be drawn is said, not fatal: the faults' outcomes are the verdict."""
    from botocore.exceptions import BotoCoreError, ClientError

    from console.cli.dashboard import write
    from nodemedic.contracts.stack import dashboard_name

    page = Path(tempfile.gettempdir()) / f"nodemedic-demo-dashboard-{workdir.name}.html"
    minutes = max(1, round((time.time() - since) / 60) + 1)
    try:
        write(
            world.aws("cloudwatch"),
            dashboard_name(world.settings.name),
            page,
            minutes=minutes,
            period=10,
        )
    except (BotoCoreError, ClientError, OSError, ValueError) as exc:
        return f"not drawn ({exc})"
    return str(page)


def _demo(args: argparse.Namespace, workdir: Path, say: Say, results: TextIO) -> int:
    from world.scenarios.registry import SCENARIOS, SETTINGS, WORLDS
    from world.snapshot import render, snapshot
    from world.start import local_world
    from world.world import demo_settings

    log = workdir / "world.log"
    say(f"nodemedic demo ({args.scenario}): starting the local world in {workdir} (log: {log})")
    began = time.time()
    settings = demo_settings(**SETTINGS.get(args.scenario, {}))
    with (
        chatter_to(log),
        local_world(
            workdir,
            settings=settings,
            nodes=args.nodes,
            say=say,
            **WORLDS.get(args.scenario, {}),
        ) as world,
    ):
        say(f"World up in {world.timings['world']:.1f}s.")
        if world.settings.accept_injected_faults:
            say(
                "Cluster setting accept_injected_faults is on: the faults below are lines "
                "written with `nodemedic inject`, not by a kernel, and act like kernel lines "
                "only because of it (off, the default, they would only be notified)."
            )
        if world.settings.proof_of_origin == "enforce":
            say(
                "Proof of origin is enforced: each agent signs its lines with a key registered "
                "with its instance identity document, which a test authority made for this "
                "world signs in AWS's place."
            )
        scenario_began = time.time()
        result = SCENARIOS[args.scenario](world, say)
        state = snapshot(world)
        for line in render(state, since=scenario_began):
            say(line)
        verdict = "every fault had its expected outcome" if result.ok else "FAILED"
        problems = [*result.problems, *(p for r in result.runs for p in r.problems)]
        say("")
        say(
            f"nodemedic demo ({args.scenario}): {verdict}; scenario "
            f"{time.time() - scenario_began:.1f}s, total {time.time() - began:.1f}s"
        )
        for problem in problems:
            say(f"  - {problem}")
        say(f"Dashboard: {_dashboard(world, workdir, since=began)}")
        if args.json:
            document = {
                **result.to_json(),
                "timings": {k: round(v, 3) for k, v in world.timings.items()},
                "scenario_seconds": round(time.time() - scenario_began, 3),
                **state,
            }
            print(json.dumps(document, indent=2, sort_keys=True), file=results, flush=True)
    return 0 if result.ok else EXIT_FAILED
