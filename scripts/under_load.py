"""Run a pytest selection on a busy machine, several times in a row, to prove its waits and
timings hold under load (CI may share its cores).

The load is ``--factor`` busy loops per core, each a process of its own at normal priority,
each ending by itself after ``--max-seconds`` (so a killed run leaves none behind), and all
killed when the runs end. The runs stop at the first failure.

    python -m scripts.under_load --times 3 -- tests/e2e/test_jobs.py -x

Exit status: pytest's of the last run; 0 when every run passed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

BUSY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def busy_loops(count: int, seconds: float) -> Iterator[list[int]]:
    """``count`` processes spinning a core each for at most ``seconds``; their pids."""
    loops = [
        subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=seconds)]) for _ in range(count)
    ]
    try:
        yield [p.pid for p in loops]
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factor", type=float, default=2.0, help="busy loops per core")
    parser.add_argument("--times", type=int, default=3, help="runs in a row")
    parser.add_argument(
        "--max-seconds", type=float, default=3600.0, help="the longest the load may last"
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    count = max(1, round(args.factor * cores))
    code = 0
    with busy_loops(count, args.max_seconds) as pids:
        print(f"under_load: {count} busy loops on {cores} cores (pids {pids})", flush=True)
        for run in range(1, args.times + 1):
            began = time.monotonic()
            code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args])
            load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
            print(
                f"under_load: run {run}/{args.times}: exit {code} in "
                f"{time.monotonic() - began:.0f} s (load average {load})",
                flush=True,
            )
            if code != 0:
                break
    return code


if __name__ == "__main__":
    sys.exit(main())
