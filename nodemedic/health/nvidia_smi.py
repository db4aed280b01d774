"""``nvidia-smi -q -x`` → health results: the GPU rules the agent and triage share.

Per GPU (device = PCI bus id): volatile uncorrectable ECC errors, a retired page or a
remapped row waiting for a GPU reset, a failed row remapping, the hardware slowdown /
power brake clock event reasons, and what drivers >= 570 say about repairs (the SRAM
threshold, unrepairable memory, a channel or TPC repair waiting for a reset, and the
driver's own recovery action); for the node, fewer GPUs than expected. Element names
differ between driver generations (see tests/events/nvidia-smi/SOURCES.md); all are read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.health.devices import missing_devices
from nodemedic.health.result import Figure, Result, Status

UNCORRECTABLE = (
    "double_bit/total",
    "dram_uncorrectable",
    "sram_uncorrectable",
    "sram_uncorrectable_parity",
    "sram_uncorrectable_secded",
)
"""ECC counters of uncorrectable errors, under ``ecc_errors/{volatile,aggregate}``: the older
drivers' ``double_bit`` total, or the newer drivers' DRAM and SRAM counts."""
CORRECTABLE = ("single_bit/total", "dram_correctable", "sram_correctable")
SRAM_SOURCES = ("sram_l2", "sram_sm", "sram_microcontroller", "sram_pcie", "sram_other")
"""``ecc_errors/aggregate_uncorrectable_sram_sources``: the unit of each lifetime SRAM
uncorrectable error. A histogram with no action of its own (a healthy H200 carries an L2
parity error): only the figures of the threshold it feeds."""
REPAIR_FLAGS: dict[str, tuple[Status, str]] = {
    "unrepairable_memory": ("fail", "UnrepairableMemory"),
    "channel_repair_pending": ("warn", "ChannelRepairPending"),
    "tpc_repair_pending": ("warn", "TpcRepairPending"),
}
"""``ecc_errors/<flag>`` Yes: memory the GPU can no longer repair, or a repair that a GPU
reset applies (the manual: "If one of the repair flags is pending, check the GPU Recovery
action")."""
RECOVERY_ACTIONS: dict[str, tuple[Status, str]] = {
    "Reset": ("fail", "RecoveryActionReset"),
    "GPU Reset Required": ("fail", "RecoveryActionReset"),
    "Drain and Reset": ("fail", "RecoveryActionDrainAndReset"),
    "Reboot": ("fail", "RecoveryActionReboot"),
    "Node Reboot Required": ("fail", "RecoveryActionReboot"),
    "Drain P2P": ("warn", "RecoveryActionDrainP2P"),
}
"""``gpu_recovery_action``, the driver's answer to "what clears the fault": the nvidia-smi
manual names the values None, Reset, Reboot, Drain P2P, Drain and Reset; Xid 154 prints the
same actions as "GPU Reset Required" and "Node Reboot Required", which are read too. None
and no value need nothing; any other value is ``RecoveryActionUnknown``, told as it is."""
# NVML clock event reason bits (nvmlClocksEventReason*), for the figures.
_REASON_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clocks_setting": 0x100,
}


def _number(element: ET.Element | None) -> int | None:
    """The integer in an element, or None for absent / ``N/A`` / unsupported."""
    if element is None or element.text is None:
        return None
    text = element.text.strip()
    return int(text) if text.isdigit() else None


def _yes(element: ET.Element | None) -> bool:
    return element is not None and (element.text or "").strip() == "Yes"


def ecc_errors(gpu: ET.Element, scope: str, paths: tuple[str, ...]) -> int | None:
    """The sum of the counters at ``paths`` under ``ecc_errors/<scope>`` the board reports."""
    values = [_number(gpu.find(f"ecc_errors/{scope}/{path}")) for path in paths]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def volatile_uncorrectable(gpu: ET.Element) -> int | None:
    return ecc_errors(gpu, "volatile", UNCORRECTABLE)


def clock_event_mask(gpu: ET.Element) -> int:
    mask = 0
    for group in ("clocks_event_reasons", "clocks_throttle_reasons"):
        for child in gpu.findall(f"{group}/*"):
            name = child.tag.split("_reason_", 1)[-1]
            if (child.text or "").strip() == "Active":
                mask |= _REASON_BITS.get(name, 0)
    return mask


def _ecc(gpu: ET.Element) -> tuple[Status, str, dict[str, Figure]] | None:
    volatile = volatile_uncorrectable(gpu)
    if not volatile:
        return None
    figures: dict[str, Figure] = {"ecc_uncorrected_volatile": volatile}
    aggregate = _number(gpu.find("ecc_errors/aggregate/double_bit/total"))
    if aggregate is None:
        aggregate = _number(gpu.find("ecc_errors/aggregate/dram_uncorrectable"))
    if aggregate is not None:
        figures["ecc_uncorrected_aggregate"] = aggregate
    return "fail", "EccUncorrectable", figures


def _retired_pages(gpu: ET.Element) -> tuple[Status, str, dict[str, Figure]] | None:
    pages = gpu.find("retired_pages")
    if pages is None or not (
        _yes(pages.find("pending_retirement")) or _yes(pages.find("pending_blacklist"))
    ):
        return None
    figures: dict[str, Figure] = {"retired_pages_pending": 1}
    for kind, path in (("dbe", "double_bit_retirement"), ("sbe", "multiple_single_bit_retirement")):
        count = _number(pages.find(f"{path}/retired_count"))
        if count is not None:
            figures[f"retired_pages_{kind}"] = count
    return "warn", "RetiredPagesPending", figures


def _remapped_rows(gpu: ET.Element) -> list[tuple[Status, str, dict[str, Figure]]]:
    rows = gpu.find("remapped_rows")
    if rows is None:
        return []
    counts: dict[str, Figure] = {}
    for name in ("remapped_row_corr", "remapped_row_unc"):
        value = _number(rows.find(name))
        if value is not None:
            counts[name] = value
    found: list[tuple[Status, str, dict[str, Figure]]] = []
    if _yes(rows.find("remapped_row_failure")) or _yes(rows.find("failure")):
        found.append(("fail", "RowRemapFailure", {"remapped_rows_failure": 1, **counts}))
    if _yes(rows.find("remapped_row_pending")) or _yes(rows.find("pending")):
        found.append(("warn", "RowRemapPending", {"remapped_rows_pending": 1, **counts}))
    return found


def _repairs(gpu: ET.Element) -> list[tuple[Status, str, dict[str, Figure]]]:
    """The SRAM threshold and the repair flags of ``ecc_errors`` (drivers >= 570)."""
    found: list[tuple[Status, str, dict[str, Figure]]] = []
    if _yes(gpu.find("ecc_errors/aggregate/sram_threshold_exceeded")):
        figures: dict[str, Figure] = {"sram_threshold_exceeded": 1}
        counts = [f"aggregate/{name}" for name in UNCORRECTABLE if name.startswith("sram_")]
        counts += [f"aggregate_uncorrectable_sram_sources/{name}" for name in SRAM_SOURCES]
        for path in counts:
            value = _number(gpu.find(f"ecc_errors/{path}"))
            if value is not None:
                figures[path.rsplit("/", 1)[1]] = value
        found.append(("fail", "SramThresholdExceeded", figures))
    for flag, (status, reason) in REPAIR_FLAGS.items():
        if _yes(gpu.find(f"ecc_errors/{flag}")):
            found.append((status, reason, {flag: 1}))
    return found


def _recovery_action(gpu: ET.Element) -> tuple[Status, str, dict[str, Figure]] | None:
    action = (gpu.findtext("gpu_recovery_action") or "").strip()
    # "[Not Supported]", "[N/A]" and "Requested functionality has been deprecated" are how
    # nvidia-smi says a board or driver has no value: no action asked.
    if action in ("", "None", "N/A") or action.startswith("[") or "deprecated" in action:
        return None
    status, reason = RECOVERY_ACTIONS.get(action, ("warn", "RecoveryActionUnknown"))
    return status, reason, {"gpu_recovery_action": action}


def _clock_events(gpu: ET.Element) -> list[tuple[Status, str, dict[str, Figure]]]:
    mask = clock_event_mask(gpu)
    found: list[tuple[Status, str, dict[str, Figure]]] = []
    if mask & (_REASON_BITS["hw_slowdown"] | _REASON_BITS["hw_thermal_slowdown"]):
        found.append(("warn", "HwSlowdown", {"clocks_event_reasons": mask}))
    if mask & _REASON_BITS["hw_power_brake_slowdown"]:
        found.append(("warn", "PowerBrake", {"clocks_event_reasons": mask}))
    return found


def gpu_results(gpu: ET.Element, ts: str) -> list[Result]:
    """One result per problem found on this GPU, or one ``ok`` result."""
    device = gpu.get("id") or gpu.findtext("pci/pci_bus_id") or "unknown"
    problems = [p for p in (_ecc(gpu), _retired_pages(gpu), _recovery_action(gpu)) if p]
    problems += _remapped_rows(gpu) + _repairs(gpu) + _clock_events(gpu)
    if not problems:
        healthy: dict[str, Figure] = {"ecc_uncorrected_volatile": volatile_uncorrectable(gpu) or 0}
        problems = [("ok", "Healthy", healthy)]
    return [
        Result(NVIDIA_SMI_CHECK, device, status, reason, figures, ts)
        for status, reason, figures in problems
    ]


def evaluate(document: bytes, expected_gpus: int, ts: str) -> list[Result]:
    """Results for one ``nvidia-smi -q -x`` output; raises ``ET.ParseError``."""
    # The document is nvidia-smi's own output; expat (>= 2.4) caps entity expansion.
    return evaluate_tree(ET.fromstring(document), expected_gpus, ts)  # noqa: S314


def evaluate_tree(root: ET.Element, expected_gpus: int, ts: str) -> list[Result]:
    """Results for the report's tree, however it was read (XML, or the text report)."""
    gpus = root.findall("gpu")
    results = missing_devices(NVIDIA_SMI_CHECK, expected_gpus, len(gpus), ts, "GpuMissing")
    for gpu in gpus:
        results.extend(gpu_results(gpu, ts))
    return results
