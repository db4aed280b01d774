"""``nodemedic``: the one command line. Each subcommand lives in the module that does it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from nodemedic.contracts.release import VERSION

Configure = Callable[[argparse.ArgumentParser], None]
CLOSED_PIPE = 141
"""The exit status when the reader of our output went away (``| head``): 128 + SIGPIPE,
what a shell reports for a tool the signal ended, so ``set -o pipefail`` sees the same."""

# name → (module, configure, run, help); modules import lazily so `triage` does not pay
# for boto3 and the agent does not pay for the CDK.
_COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "triage": ("console.cli.triage", "configure", "run", "classify kernel logs offline"),
    "catalog": ("console.cli.catalog", "configure", "run", "list rules, print the filter"),
    "agent": ("agent.cli", "configure_agent", "run_agent", "run the node agent"),
    "inject": ("agent.injectcli", "configure_inject", "run_inject", "write a realistic fault line"),
    "breaker": ("console.cli.breaker", "configure", "run", "read or reset the cluster's breaker"),
    "reboot": ("console.cli.manual", "configure", "run", "reboot a node by hand"),
    "replace": ("console.cli.manual", "configure", "run", "replace a node by hand"),
    "approve": ("console.cli.approval", "configure", "run", "approve a remediation that waits"),
    "deny": ("console.cli.approval", "configure", "run", "deny a remediation that waits"),
    "handoff": ("console.cli.handoff", "configure", "run", "hand a held node to a vendor"),
    "take-back": ("console.cli.handoff", "configure", "run", "take a handed-off node back"),
    "history": ("console.cli.history", "configure", "run", "every remediation in the ledger"),
    "dlq": ("console.cli.dlq", "configure", "run", "list or replay the dead-letter queue"),
    "backtest": ("console.cli.backtest", "configure", "run", "replay history: what would it do?"),
    "dashboard": ("console.cli.dashboard", "configure", "run", "draw the CloudWatch dashboard"),
    "demo": ("world.demo", "configure", "run", "run the whole pipeline locally, no AWS"),
}


def parser(wanted: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the ``wanted`` subcommand's module is imported to configure it."""
    top = argparse.ArgumentParser(
        prog="nodemedic", description="Find broken accelerator hardware and heal it."
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {VERSION}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, configure, run, help_text) in _COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_target=(module, configure, run))
        if name == wanted:
            getattr(import_module(module), configure)(command)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    wanted = next((a for a in argv if not a.startswith("-")), None)
    args = parser(wanted).parse_args(argv)
    module, _, run = args._target
    try:
        code: int = getattr(import_module(module), run)(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # Whatever is still buffered would fail again when Python flushes stdout at exit:
        # send it nowhere, and end as quietly as a tool the signal would have ended.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE
    return code
