"""The deep check of NVIDIA GPUs: how many there are against the instance type, each GPU's
ECC and row-remap state (``nvidia-smi -q -x``, judged as the agent's health check judges it),
DCGM's level 2 diagnostics where DCGM is installed, and an NCCL all-reduce over every GPU
where nccl-tests is installed, held to the type's least bus bandwidth.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent.checks.nvidia import COMMAND as NVIDIA_SMI
from agent.deepcheck.tools import (
    ALL_REDUCE_PERF,
    DCGMI,
    MIN_BUSBW,
    Node,
    Ran,
    count_result,
    failed,
    installed,
    run_dump,
    run_optional,
    run_tool,
    skipped,
)
from nodemedic.contracts.health import DCGMI_DIAG_CHECK, GPU_COUNT_CHECK, NCCL_ALL_REDUCE_CHECK
from nodemedic.dumps import dcgmi
from nodemedic.health.bandwidth import judge, minimum_for
from nodemedic.health.nvidia_smi import gpu_results
from nodemedic.health.result import Result

SUBCHECKS = (GPU_COUNT_CHECK, DCGMI_DIAG_CHECK, NCCL_ALL_REDUCE_CHECK)


def _report(node: Node) -> ET.Element | Result:
    """nvidia-smi's report, or the result saying why there is none."""
    ran = run_tool(node.command(NVIDIA_SMI), node.timeout)
    if ran is None or ran.exit_code != 0:
        return failed(GPU_COUNT_CHECK, ran, node)
    try:
        # The document is nvidia-smi's own output; expat (>= 2.4) caps entity expansion.
        return ET.fromstring(ran.output)  # noqa: S314
    except ET.ParseError:
        return failed(GPU_COUNT_CHECK, ran, node)


def _nccl(node: Node, gpus: int) -> list[Result]:
    override = MIN_BUSBW.value(node.options)
    known = minimum_for(NCCL_ALL_REDUCE_CHECK, node.instance_type)
    minimum = override if override is not None else known.gbps if known else None

    def read(ran: Ran) -> list[Result]:
        return [judge(NCCL_ALL_REDUCE_CHECK, ran.output, minimum, node.ts)]

    return run_optional(NCCL_ALL_REDUCE_CHECK, node.command(ALL_REDUCE_PERF, gpus=gpus), node, read)


def deep_check(node: Node) -> list[Result]:
    command = node.command(NVIDIA_SMI)
    if not installed(command):
        if node.expected_gpus:
            # The NVIDIA container runtime puts nvidia-smi in the container; without it the
            # image or the runtime is wrong, not the GPUs, and a failure here would replace a
            # node over a setting. The skip ships with its reason, as every skip does.
            detail = f"{command[0] if command else 'nvidia-smi'} not found"
            missing = skipped(GPU_COUNT_CHECK, "ToolMissing", detail, node.ts)
            return [missing] + [skipped(c, "NoGpuTool", detail, node.ts) for c in SUBCHECKS[1:]]
        why = "no nvidia-smi and the instance type has no NVIDIA GPU"
        return [skipped(c, "NoNvidiaGpu", why, node.ts) for c in SUBCHECKS]
    report = _report(node)
    if isinstance(report, Result):
        return [report] + [
            skipped(c, "NoGpuReport", "nvidia-smi failed", node.ts) for c in SUBCHECKS[1:]
        ]
    gpus = report.findall("gpu")
    results = [count_result(GPU_COUNT_CHECK, node.expected_gpus, len(gpus), "GpuMissing", node.ts)]
    for gpu in gpus:
        results.extend(gpu_results(gpu, node.ts))
    return (
        results
        + run_dump(DCGMI_DIAG_CHECK, DCGMI, node, dcgmi.evaluate, None)
        + _nccl(node, len(gpus))
    )
