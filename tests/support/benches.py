"""Each benchmark of the Makefile's ``bench`` target at a tiny size, and what its output
must show: its own figure beside the baseline measured in the same run."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

from tests.support.paths import ROOT


@dataclass(frozen=True)
class Quick:
    args: tuple[str, ...]
    baseline: str
    """A pattern of the line that shows the baseline measured in the same run."""
    world: bool
    """Starts the local world (moto, the kube-apiserver): an e2e test, not an integration one."""


QUICK = {
    "bench.classifier": Quick(
        ("--lines", "2000"), r"naive re\.search loop: +[\d,]+ lines/s", False
    ),
    "bench.heads": Quick(("--lines", "2000"), r"baseline, bare messages: +[\d,]+ lines/s", False),
    "bench.agent": Quick(
        ("--lines", "2000", "--burst", "2000", "--idle-seconds", "1", "--ship-lines", "2000"),
        r"stock boto3 logs client \(before\) +[\d.]+ MB",
        False,
    ),
    "bench.mttr": Quick(
        ("--faults", "3", "--baseline", "1"),
        r"baseline, decision started directly -> cordoned \(1 runs\): p50 [\d.]+s",
        True,
    ),
    "bench.recovery": Quick(
        ("--paths", "reboot", "--launch-seconds", "1"),
        r"baseline: today's reboot path, job running again after [\d.]+s",
        True,
    ),
    "bench.coldstart": Quick(("--runs", "1"), r"[\d.]+x a bare import of boto3", False),
    "bench.backtest": Quick(
        ("--lines", "5000", "--nodes", "4"), r"bare classifier +[\d,]+ lines/min", False
    ),
    "bench.backtest_memory": Quick(
        ("--sizes", "1000,3000"), r"3,000 lines  before \(\w+\) +peak RSS +\d+ MiB", False
    ),
    "bench.triage": Quick(("--lines", "5000"), r"[\d,]+ lines/CPU-s  \(bare classifier\)", False),
    "bench.peers --if-built": Quick(
        ("--lines", "5000", "--passes", "1"), r"bench\.peers skipped: |triage [\d.]+x", False
    ),
    "bench.cost": Quick(
        ("--nodes", "2", "--minutes", "0.2", "--faults", "1"), r"total +[\d.]+\$ +[\d.]+\$", True
    ),
    "bench.jobs": Quick(
        ("--lines", "2000", "--jobs", "2"), r"plain re\.match loop .*: +[\d,]+ lines/s", False
    ),
    "bench.storm": Quick(
        ("--sizes", "4,6", "--share", "0.75", "--spread", "2"), r"baseline: 4 nodes", True
    ),
    "bench.storm --distinct": Quick(
        ("--sizes", "4,6", "--share", "0.5", "--spread", "1"), r"baseline: 4 nodes", True
    ),
    "bench.sdkcalls": Quick(
        ("--calls", "40", "--rounds", "1"), r"over HTTP \(baseline\) +[\d.]+ CPU-ms a call", False
    ),
    "bench.scale": Quick(
        ("--nodes", "30", "--failing", "3", "--burst", "0", "--spread", "1"),
        r"3 of 30, baseline: breaker limits raised",
        True,
    ),
}


def makefile_benches() -> list[str]:
    """The modules the Makefile's ``bench`` target runs, with their flags, in its order."""
    text = (ROOT / "Makefile").read_text()
    target = text.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"-m (bench\.\w+(?: --[\w-]+)*)", target)


def run_quick(module: str) -> str:
    """Run ``module`` at its tiny size; its stdout, once it has exited 0 and shown its
    baseline."""
    quick = QUICK[module]
    done = subprocess.run(
        [sys.executable, "-m", *module.split(), *quick.args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"{module} exited {done.returncode}:\n{done.stderr[-4000:]}"
    assert re.search(quick.baseline, done.stdout), f"{module} shows no baseline:\n{done.stdout}"
    return done.stdout
