"""``nodemedic triage`` beside the peers' matchers on the same lines: CPU time and peak RSS.

The peers are node-problem-detector's system-log monitor (``npdmatch``: its own
``CompilePattern`` and ``LogBuffer`` with ``kernel-monitor.json`` and
``readonly-monitor.json``) and GPUd's kmsg matchers (``gpudmatch``), each a small Go main
built inside the peer's own source tree by ``shared/peers/build.sh`` (its README says how).
They only match; triage also reads the prefixes, classifies, tallies the verdict and writes
every fault as JSON.

Both inputs are ``bench.triage``'s (whole boot logs, fault-dense lines), written once per
run. Every side runs as a process of its own, pinned to one core where ``taskset`` is
there (a Go program's collector would otherwise run beside it), alternating (A B C A B C):
a loaded machine slows each side alike. The best pass of each side is kept; the ratio is
triage's lines per CPU-second over the peer's.

    python -m bench.peers --peers DIR [--lines 1000000] [--passes 2] [--if-built]

``--peers`` defaults to ``$PEERS``, else ``../shared/peers/build`` beside the checkout.
``make bench`` runs it with ``--if-built``: where no peer is built there, it says so and
why, and skips.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench.triage import INPUTS, ROOT, triage_command, usage, write_log

NPD_CONFIGS = ("config/kernel-monitor.json", "config/readonly-monitor.json")
PEERS = ("npdmatch", "gpudmatch")


def commands(peers: Path, log: Path) -> dict[str, list[str]]:
    """Each side's command on ``log``; ``peers`` is build.sh's ``$PEERS``."""
    configs = ",".join(str(peers / "npd-src" / config) for config in NPD_CONFIGS)
    return {
        "nodemedic triage": triage_command(log),
        "npdmatch": [str(peers / "bin" / "npdmatch"), "-config", configs, str(log)],
        "gpudmatch": [str(peers / "bin" / "gpudmatch"), str(log)],
    }


def pinned(command: list[str]) -> list[str]:
    """``command`` on one core (the first), where ``taskset`` is installed."""
    taskset = shutil.which("taskset")
    return [taskset, "-c", "0", *command] if taskset else command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peers",
        type=Path,
        default=Path(os.environ.get("PEERS") or ROOT.parent / "shared" / "peers" / "build"),
        help="build.sh's $PEERS folder",
    )
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--passes", type=int, default=2, help="runs of each side (A B C A B C)")
    parser.add_argument(
        "--if-built", action="store_true", help="skip, saying why, where no peer is built"
    )
    args = parser.parse_args()
    missing = [name for name in PEERS if not (args.peers / "bin" / name).is_file()]
    if len(missing) == len(PEERS):
        why = f"{args.peers}/bin: no peer built; build them with shared/peers/build.sh"
        if not args.if_built:
            raise SystemExit(why)
        print(f"bench.peers skipped: {why} (PEERS=<that folder>, its README says how)")
        return
    for name in missing:
        print(f"{args.peers}/bin/{name}: missing (build.sh builds it), left out")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.lines:,} lines an input,"
        f" {args.passes} passes: lines per CPU-second, peak RSS"
    )
    with tempfile.TemporaryDirectory() as folder:
        for name, share in INPUTS.items():
            log = Path(folder) / f"{name}.log"
            write_log(log, args.lines, share)
            best: dict[str, tuple[float, float]] = {}
            sides = {
                side: command
                for side, command in commands(args.peers, log).items()
                if side not in missing
            }
            for _ in range(args.passes):
                for side, command in sides.items():
                    cpu, rss, status = usage(pinned(command), ROOT)
                    if status not in (0, 2):
                        raise SystemExit(f"{side} exited {status} on {log}")
                    previous = best.get(side, (float("inf"), 0.0))
                    best[side] = (min(previous[0], cpu), max(previous[1], rss))
            ours = args.lines / best["nodemedic triage"][0]
            for side, (cpu, rss) in best.items():
                rate = args.lines / cpu
                ratio = "" if side == "nodemedic triage" else f"  triage {ours / rate:.2f}x"
                print(f"  {name:<6} {side:<17} {rate:>9,.0f}  {rss:>5.0f} MiB{ratio}")
            log.unlink()


if __name__ == "__main__":
    main()
