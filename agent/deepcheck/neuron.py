"""The deep check of Neuron devices (Trainium, Inferentia): how many the driver lists in
sysfs against the instance type, their uncorrectable error counters since boot (the agent's
sysfs check with a fresh baseline: any error this boot counts), what ``neuron-ls`` lists,
and ``nccom-test``'s all-reduce where it is installed.
"""

from __future__ import annotations

from agent.checks.base import CounterBaseline, ToolMissing
from agent.checks.neuron import NeuronSysfs
from agent.deepcheck.tools import (
    NCCOM_TEST,
    NEURON_LS,
    Node,
    Ran,
    count_result,
    run_dump,
    run_optional,
    skipped,
)
from nodemedic.contracts.health import NCCOM_TEST_CHECK, NEURON_COUNT_CHECK, NEURON_LS_CHECK
from nodemedic.dumps import neuron_ls
from nodemedic.health.bandwidth import judge, minimum_for
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Result

SUBCHECKS = (NEURON_COUNT_CHECK, NEURON_LS_CHECK, NCCOM_TEST_CHECK)


def _sysfs(node: Node) -> list[Result]:
    # Never committed: the baseline starts at zero, so every error of this boot is seen.
    baseline = CounterBaseline(node.state_dir / "deep-check-neuron-counters.json", node.boot_id)
    check = NeuronSysfs(node.sys_root, baseline)
    if not check.root.is_dir():
        raise ToolMissing(f"{check.root} not found (no Neuron driver)")
    devices = check.devices()
    results = [
        count_result(
            NEURON_COUNT_CHECK, node.expected_neuron_devices, len(devices), "DeviceMissing", node.ts
        )
    ]
    for device in devices:
        results.extend(check.device_results(device, node.ts))
    return results


def deep_check(node: Node) -> list[Result]:
    try:
        results = _sysfs(node)
    except ToolMissing as exc:
        if not node.expected_neuron_devices:
            return [skipped(c, "NoNeuronDevice", str(exc), node.ts) for c in SUBCHECKS]
        results = [
            count_result(
                NEURON_COUNT_CHECK, node.expected_neuron_devices, 0, "DeviceMissing", node.ts
            )
        ]

    def collective(ran: Ran) -> list[Result]:
        minimum = minimum_for(NCCOM_TEST_CHECK, node.instance_type)
        return [judge(NCCOM_TEST_CHECK, ran.output, minimum.gbps if minimum else None, node.ts)]

    expected = Devices(neuron_devices=node.expected_neuron_devices)
    results += run_dump(NEURON_LS_CHECK, NEURON_LS, node, neuron_ls.evaluate, expected)
    return results + run_optional(NCCOM_TEST_CHECK, node.command(NCCOM_TEST), node, collective)
