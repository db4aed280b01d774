"""The Lambdas' cold start: the import of each handler module (Lambda's init phase) in a
fresh interpreter, several runs, median, next to a bare ``import boto3`` measured in the
same run, and the parts that cost most (the X-Ray SDK, boto3, the fault catalog).

    python -m bench.coldstart [--runs 7]

Each figure is one fresh ``python`` process importing one module, timed inside the process
(the interpreter's own start-up is not counted, as Lambda's runtime is up before the
handler's module is imported). The AWS clients are built on the first invocation, not at
import, and are not counted either.

The process has the variables Lambda's runtime sets before it imports a handler
(``LAMBDA_TASK_ROOT``, the function's name, the X-Ray daemon's address). Without them the
X-Ray SDK takes itself to be outside Lambda: its recorder then builds two botocore X-Ray
clients for centralized sampling at import (the whole endpoint table and X-Ray's model,
~600 ms on this machine), which it never does in Lambda, where the sampling decision
arrives with the invocation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 300
"""The classify Lambda's import budget."""

MODULES = [
    ("baseline: import boto3", "boto3"),
    ("classify handler", "lambdas.classify.handler"),
    ("policy handler", "lambdas.policy.handler"),
    ("kube handler", "lambdas.kube.handler"),
]
PARTS = [
    ("X-Ray SDK (aws_xray_sdk.core)", "aws_xray_sdk.core"),
    ("fault catalog (nodemedic.detect.classifier)", "nodemedic.detect.classifier"),
    ("Powertools idempotency", "aws_lambda_powertools.utilities.idempotency"),
]
TIMER = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
LAMBDA_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "POWERTOOLS_SERVICE_NAME": "nodemedic-bench",
    "PYTHONPATH": str(ROOT),
    # Lambda's reserved runtime variables: the handler's module is imported under them.
    "LAMBDA_TASK_ROOT": str(ROOT),
    "AWS_LAMBDA_FUNCTION_NAME": "nodemedic-bench",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
}


def in_lambda(code: str) -> str:
    """The last line ``code`` prints in a fresh interpreter set up as Lambda's runtime is."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **LAMBDA_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def import_ms(module: str, runs: int) -> list[float]:
    """Milliseconds to import ``module`` in each of ``runs`` fresh interpreters."""
    return [float(in_lambda(TIMER.format(module=module))) * 1000 for _ in range(runs)]


def line(label: str, times: list[float]) -> str:
    return (
        f"  {label:<46} median {statistics.median(times):6.0f} ms "
        f"(min {min(times):.0f}, max {max(times):.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per module")
    args = parser.parse_args()
    print(f"cold start: import in a fresh interpreter, {args.runs} runs each")
    medians = {}
    for label, module in MODULES:
        times = import_ms(module, args.runs)
        medians[module] = statistics.median(times)
        print(line(label, times))
    print("  of which (alone, in a fresh interpreter):")
    for label, module in PARTS:
        print("  " + line(label, import_ms(module, args.runs)))
    classify, boto3 = medians["lambdas.classify.handler"], medians["boto3"]
    print(
        f"  classify: {classify:.0f} ms, {classify / boto3:.1f}x a bare import of boto3 "
        f"(target <= {TARGET_MS} ms)"
    )


if __name__ == "__main__":
    main()
