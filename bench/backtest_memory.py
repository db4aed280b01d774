"""Peak memory of ``nodemedic backtest`` as the history grows: this tree's streaming read
beside the design that held every event in memory, measured in the same run.

The histories are ``bench.backtest``'s (a log group's tail of real lines from tests/events,
64 nodes over a day) at each size of ``--sizes``, written a block at a time. Each is
replayed on an enforcing cluster by a ``backtest --format json`` process of its own, whose
peak RSS and CPU time are measured (``bench.triage.usage``); beside it, the same command of
the tree at ``--before`` on the same file (default: the revision before the backtest
streamed its files, found in git's history). This tree's peak RSS should stay flat while
the lines grow tenfold; the one before grows with them.

    python -m bench.backtest_memory [--sizes 10000,100000,1000000] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.backtest import tail_line
from bench.classifier import corpus
from bench.triage import ROOT, export, usage

STREAMED = "console/backtest/files.py"
"""The module the streaming read came with: the revision before it held every event."""
BLOCK = 100_000


def write_history(path: Path, lines: int, nodes: int, fault_share: float) -> None:
    """``lines`` lines of a log group's tail, a block at a time: the bench holds no history
    either."""
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, lines, BLOCK):
            messages = corpus(min(BLOCK, lines - start), fault_share, seed=start)
            out.write(
                "".join(
                    tail_line(number, lines, nodes, line) + "\n"
                    for number, line in enumerate(messages, start)
                )
            )


def before_streaming() -> str:
    """The revision before ``STREAMED`` was added."""
    added = subprocess.run(
        ["git", "-C", str(ROOT), "log", "--format=%H", "--diff-filter=A", "--", STREAMED],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not added:
        raise SystemExit(f"git history has no revision adding {STREAMED}: give --before REV")
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", f"{added[-1]}^"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def measure(tree: Path, history: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of one backtest of ``history`` by ``tree``."""
    command = [sys.executable, "-m", "console.cli", "backtest", str(history)]
    command += ["--enforce", "--format", "json"]
    cpu, rss, status = usage(command, tree, {**os.environ, "PYTHONPATH": str(tree)})
    if status != 0:
        raise SystemExit(f"backtest of {tree} exited {status} on {history}")
    return cpu, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="lines of each history")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--fault-share", type=float, default=0.001)
    parser.add_argument("--before", metavar="REV", help="the revision to measure beside")
    args = parser.parse_args()
    before = args.before or before_streaming()
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": ROOT, f"before ({before})": export(before, Path(folder) / "old")}
        print(
            f"backtest --enforce --format json of a log group's tail, {args.nodes} nodes,"
            f" {args.fault_share:.1%} fault lines: peak RSS and CPU time per process"
        )
        for lines in (int(size) for size in args.sizes.split(",")):
            history = Path(folder) / "tail.log"
            write_history(history, lines, args.nodes, args.fault_share)
            for side, tree in trees.items():
                cpu, rss = measure(tree, history)
                print(
                    f"  {lines:>10,} lines  {side:<18} peak RSS {rss:>6.0f} MiB"
                    f"  {cpu:>6.1f} CPU-s  {lines / cpu:>8,.0f} lines/CPU-s"
                )
            history.unlink()


if __name__ == "__main__":
    main()
