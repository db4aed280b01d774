"""``nodemedic triage --format json`` on large logs: lines per CPU-second and peak memory.

Two inputs, written once per run from real lines of tests/events (``classifier.corpus``,
their numbers varied) with the prefixes the kernel's tools print (dmesg, the journal's
short form, syslog):

- whole boot logs: ordinary kernel chatter with a fault line in a thousand;
- fault-dense lines: every line a fault line, as a node in a storm logs.

Each is judged by a ``nodemedic triage`` process of its own, whose CPU time (user + system)
and peak RSS (``usage``) are measured. The baseline, measured in the same run on the
same file, is the bare classifier: ``Classifier.classify_lines`` on every line's message,
read whole beforehand, in a process of its own. With ``--baseline REV``, the same command
and the bare classifier of the tree at git revision REV run on the same files too,
alternating with this tree's (A B A B), and the best pass of each side is kept.

    python -m bench.triage [--lines 1000000] [--baseline REV]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.classifier import corpus

ROOT = Path(__file__).parents[1]
PREFIXES = (
    "[{seconds:12.6f}] {line}",
    "Nov 29 03:{minute:02d}:{second:02d} ip-10-0-1-23 kernel: {line}",
    "2026-11-29T03:{minute:02d}:{second:02d}.000001+00:00 ip-10-0-1-23 kernel: {line}",
)
INPUTS = {"boot": 0.001, "dense": 1.0}
"""Input name → the share of its lines that are fault lines."""


def write_log(path: Path, lines: int, fault_share: float) -> None:
    """``lines`` lines, written a block at a time: the bench must not hold 10M lines."""
    block = 100_000
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, lines, block):
            messages = corpus(min(block, lines - start), fault_share, seed=start)
            out.write(
                "".join(
                    PREFIXES[n % len(PREFIXES)].format(
                        seconds=n / 10, minute=n // 60 % 60, second=n % 60, line=line
                    )
                    + "\n"
                    for n, line in enumerate(messages, start)
                )
            )


def _peak_kib(pid: int) -> int:
    """The high-water mark of ``pid``'s resident set (``VmHWM``), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(found[1]) if found else 0


def usage(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, int]:
    """(CPU seconds, peak RSS in MiB, exit status) of ``command`` run to its end, its
    output dropped, whatever language it is in. The peak is read from ``/proc`` while it
    runs: the kernel's ``ru_maxrss`` at exit counts the copy of this process that was forked
    to start it, a floor the size of the bench itself."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL) as child:
        peak = 0
        while True:
            peak = max(peak, _peak_kib(child.pid))
            pid, status, used = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
    return used.ru_utime + used.ru_stime, peak / 1024, child.returncode


def triage_command(log: Path) -> list[str]:
    return [sys.executable, "-m", "console.cli", "triage", "--format", "json", str(log)]


def measure(tree: Path, log: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of one ``triage --format json`` of ``log``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, rss, status = usage(triage_command(log), tree, env)
    if status not in (0, 2):
        raise SystemExit(f"triage exited {status} on {log}")
    return cpu, rss


BARE_LINES = 1_000_000
"""The bare classifier's lines are held in its process: its rate is taken on at most these."""
BARE = """
import sys, time
from itertools import islice
from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.logformat import messages
classifier = Classifier(load_catalog())
with open(sys.argv[1], encoding="utf-8") as lines:
    texts = [entry.message for entry in messages(islice(lines, int(sys.argv[2])))]
start = time.process_time()
for _ in classifier.classify_lines(texts):
    pass
print(len(texts) / (time.process_time() - start))
"""
"""Lines per CPU-second of the bare classifier of the tree it runs in: only what every
revision since the classifier took lines in bulk has, so that a baseline tree runs it too."""


def bare(tree: Path, log: Path) -> float:
    """Lines per CPU-second of ``tree``'s bare classifier on the messages of ``log``'s lines."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-c", BARE, str(log), str(BARE_LINES)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout)


def export(rev: str, into: Path) -> Path:
    """The packages triage runs on at ``rev``, exported (not checked out: the working tree
    stays as it is)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "console", "nodemedic"],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--baseline", metavar="REV", help="also run triage of this revision")
    parser.add_argument("--passes", type=int, default=2, help="runs of each side (A B A B)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trees = {"this tree": ROOT}
        if args.baseline:
            trees[args.baseline] = export(args.baseline, Path(folder) / "baseline")
        print(f"{args.lines:,} lines an input; CPU time and peak RSS of the triage process")
        for name, share in INPUTS.items():
            log = Path(folder) / f"{name}.log"
            write_log(log, args.lines, share)
            best: dict[str, tuple[float, float]] = {}
            rates: dict[str, float] = {}
            for _ in range(args.passes):
                for side, tree in trees.items():
                    cpu, rss = measure(tree, log)
                    previous = best.get(side, (float("inf"), 0.0))
                    best[side] = (min(previous[0], cpu), max(previous[1], rss))
                    rates[side] = max(rates.get(side, 0.0), bare(tree, log))
            for side, rate in rates.items():
                print(f"  {name:<6} {side:<15} {rate:>10,.0f} lines/CPU-s  (bare classifier)")
            for side, (cpu, rss) in best.items():
                print(
                    f"  {name:<6} {side:<15} {args.lines / cpu:>10,.0f} lines/CPU-s"
                    f"  {cpu:>7.1f} CPU-s  peak RSS {rss:>6.0f} MiB"
                )
            log.unlink()


if __name__ == "__main__":
    main()
