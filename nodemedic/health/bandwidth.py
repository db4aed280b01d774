"""Collective bandwidth tests (NCCL's ``all_reduce_perf``, Neuron's ``nccom-test``) → a
verdict against the least bandwidth the instance type should reach.

Both tools end with the mean bus bandwidth over the sizes they ran (nccl-tests:
``# Avg bus bandwidth    : 448.212``, nccom-test: ``Avg bus bandwidth:      40.6901GB/s``),
in GB/s. A node below its type's minimum is faulty, as HyperPod reports it ("bandwidth
lower than threshold: expected 80, got 30"). A type with no minimum in ``MINIMUM_BUSBW``
is measured and reported, never judged: a guess would fail good nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodemedic.contracts.health import NCCL_ALL_REDUCE_CHECK, NCCOM_TEST_CHECK
from nodemedic.health.result import Figure, Result

_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(?P<gbps>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
_WRONG = re.compile(r"Out of bounds values\s*:\s*(?P<count>\d+)")


@dataclass(frozen=True)
class Minimum:
    gbps: float
    source: str
    """Where the figure comes from: a run on that hardware, and how the minimum was set."""


MINIMUM_BUSBW: dict[str, dict[str, Minimum]] = {
    NCCL_ALL_REDUCE_CHECK: {
        "p5.48xlarge": Minimum(
            350.0,
            "8 x H100 80GB HBM3 (NVSwitch) measured 448.2 GB/s with all_reduce_perf -b 256M "
            "-e 2G -f 2 -g 8 (tests/events/nccl-tests/h100x8-all-reduce.txt); about 78 % of it",
        ),
        "p4d.24xlarge": Minimum(
            150.0,
            "A100 (NVSwitch 2.0) measured 222.1 GB/s with all_reduce_perf -b 1G -e 10G -f 2 "
            "-g 4 on a DGX A100 (tests/events/nccl-tests/SOURCES.md); about 68 % of it",
        ),
        "p4de.24xlarge": Minimum(150.0, "as p4d.24xlarge: the same A100 GPUs and NVSwitch"),
    },
    NCCOM_TEST_CHECK: {},
}
"""Least mean bus bandwidth (GB/s) per test and instance type; ``--min-busbw`` overrides it.
Add a type only with a measured run of its own to quote."""


def minimum_for(check: str, instance_type: str) -> Minimum | None:
    return MINIMUM_BUSBW.get(check, {}).get(instance_type.strip())


def average_bus_bandwidth(output: str) -> float | None:
    """The tool's ``Avg bus bandwidth`` in GB/s (the last, where ranks each print one)."""
    found = _AVG.findall(output)
    return float(found[-1]) if found else None


def judge(check: str, output: str, minimum: float | None, ts: str) -> Result:
    """One node-wide result: ``fail`` below ``minimum`` (``BandwidthLow``), for results the
    test found wrong (``WrongResults``) or for output without the average
    (``NoBandwidth``); ``skipped`` (``NoThreshold``, with the figure) when there is no
    minimum to hold it to; else ``ok``."""
    gbps = average_bus_bandwidth(output)
    if gbps is None:
        return Result(check, "node", "fail", "NoBandwidth", {"output_chars": len(output)}, ts)
    figures: dict[str, Figure] = {"busbw_gbps": gbps}
    wrong = _WRONG.search(output)
    if wrong and int(wrong["count"]):
        return Result(
            check, "node", "fail", "WrongResults", {**figures, "wrong": int(wrong["count"])}, ts
        )
    if minimum is None:
        return Result(check, "node", "skipped", "NoThreshold", figures, ts)
    figures["expected_gbps"] = minimum
    if gbps < minimum:
        return Result(check, "node", "fail", "BandwidthLow", figures, ts)
    return Result(check, "node", "ok", "Healthy", figures, ts)
