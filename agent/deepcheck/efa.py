"""The deep check of EFA: how many EFA devices sysfs lists against ``--expect-efa-devices``
(the instance type's maximum is not what its launch template attached), what libfabric can
open (``fi_info -p efa``), and a loopback ``fi_pingpong`` over EFA where it is installed.
"""

from __future__ import annotations

import re
import subprocess

from agent.checks.base import CounterBaseline, ToolMissing
from agent.checks.efa import Efa
from agent.deepcheck.tools import (
    FI_INFO,
    FI_PINGPONG,
    Node,
    Ran,
    count_result,
    run_dump,
    run_optional,
    skipped,
)
from nodemedic.contracts.health import EFA_COUNT_CHECK, FI_INFO_CHECK, FI_PINGPONG_CHECK
from nodemedic.dumps import fi_info
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Figure, Result

SUBCHECKS = (EFA_COUNT_CHECK, FI_INFO_CHECK, FI_PINGPONG_CHECK)
LOOPBACK = "127.0.0.1"
_ROW = re.compile(
    r"^(?P<size>\d+[kmg]?)\s+\S+\s+=\S+\s+\S+\s+\S+s\s+(?P<mbps>\d+(?:\.\d+)?)\s", re.M
)


def _devices(node: Node) -> int:
    baseline = CounterBaseline(node.state_dir / "deep-check-efa-counters.json", node.boot_id)
    check = Efa(node.sys_root, baseline)
    if not check.root.is_dir():
        raise ToolMissing(f"{check.root} not found (no EFA driver)")
    found = len(check.devices())
    if not found and not node.expected_efa_devices:
        raise ToolMissing(f"no EFA device under {check.root}")
    return found


def pingpong_result(ran: Ran, ts: str) -> list[Result]:
    """The client's table: ``ok`` with the largest size's MB/s; ``fail`` without a table."""
    rows = _ROW.findall(ran.output)
    if ran.exit_code != 0 or not rows:
        figures: dict[str, Figure] = {"exit_code": ran.exit_code, "rows": len(rows)}
        return [Result(FI_PINGPONG_CHECK, "node", "fail", "PingpongFailed", figures, ts)]
    size, mbps = rows[-1]
    return [
        Result(
            FI_PINGPONG_CHECK, "node", "ok", "Healthy", {"size": size, "mb_per_s": float(mbps)}, ts
        )
    ]


def _pingpong(node: Node) -> list[Result]:
    """A server on this node, then a client of it: what the EFA installer's test does."""
    server_command = node.command(FI_PINGPONG)
    try:
        server = subprocess.Popen(
            server_command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    except OSError as exc:
        return [skipped(FI_PINGPONG_CHECK, "ToolMissing", str(exc), node.ts)]
    try:
        return run_optional(
            FI_PINGPONG_CHECK,
            [*server_command, LOOPBACK],
            node,
            lambda ran: pingpong_result(ran, node.ts),
        )
    finally:
        server.kill()
        server.wait()


def deep_check(node: Node) -> list[Result]:
    try:
        found = _devices(node)
    except ToolMissing as exc:
        if not node.expected_efa_devices:
            return [skipped(c, "NoEfaDevice", str(exc), node.ts) for c in SUBCHECKS]
        found = 0
    results = [
        count_result(EFA_COUNT_CHECK, node.expected_efa_devices, found, "DeviceMissing", node.ts)
    ]
    expected = Devices(efa_interfaces=node.expected_efa_devices)
    results += run_dump(FI_INFO_CHECK, FI_INFO, node, fi_info.evaluate, expected)
    return results + _pingpong(node)
