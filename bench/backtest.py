"""Backtest throughput on one core: ``nodemedic backtest``'s read and replay of a fleet's day
against the bare classifier over the same lines, measured in the same run.

The history is real lines from tests/events (``classifier.corpus``: ordinary kernel chatter
with a share of fault lines) spread over a day of ``--nodes`` nodes, written as
``aws logs tail`` prints a log group (``<time> <instance-id>/kmsg <message>``). The backtest
side reads that file, classifies, batches, decides and runs every remediation in simulated
time on an enforcing cluster; the baseline is ``Classifier.classify_lines`` alone.

    python -m bench.backtest [--lines N] [--nodes 64] [--fault-share 0.01]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.classifier import corpus
from console.backtest.files import read_sources
from console.backtest.replay import replay
from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.settings import ClusterSettings

DAY = 86400
START = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
GOAL = 1_000_000
"""Lines a minute the backtest must replay on one core."""


def tail_line(number: int, total: int, nodes: int, line: str) -> str:
    """Line ``number`` of ``total`` as one log group's tail prints it: each line to a node in
    turn, the lines spread over a day."""
    at = datetime.fromtimestamp(START + DAY * number / total, UTC)
    return f"{at.strftime('%Y-%m-%dT%H:%M:%S.%f')}+00:00 i-{number % nodes:017x}/kmsg {line}"


def history(lines: list[str], nodes: int) -> list[str]:
    """The lines as one log group's tail."""
    return [tail_line(number, len(lines), nodes, line) for number, line in enumerate(lines)]


def per_minute(seconds: float, lines: int) -> float:
    return lines / seconds * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--fault-share", type=float, default=0.01)
    args = parser.parse_args()
    lines = corpus(args.lines, args.fault_share)
    classifier = Classifier(load_catalog())
    start = time.perf_counter()
    faults = sum(1 for _ in classifier.classify_lines(lines))
    bare = time.perf_counter() - start
    settings = ClusterSettings(name="bench", node_groups=("bench",))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tail.log"
        path.write_text("\n".join(history(lines, args.nodes)) + "\n")
        start = time.perf_counter()
        replayed = replay(read_sources([str(path)]), classifier, settings)
        full = time.perf_counter() - start
    print(f"{args.lines} lines, {faults} fault lines, {args.nodes} nodes over a day")
    print(f"  bare classifier       {per_minute(bare, args.lines):>12,.0f} lines/min")
    print(
        f"  backtest (read+replay) {per_minute(full, args.lines):>11,.0f} lines/min"
        f"  ({len(replayed.outcomes)} decisions; goal {GOAL:,})"
    )


if __name__ == "__main__":
    main()
