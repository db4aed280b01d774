"""process_batch with in-memory stand-ins: which decision a batch of one node's lines starts."""

from __future__ import annotations

from collections.abc import Mapping

from nodemedic.contracts.logs import shipped_message
from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.batch import BatchResult, LogEvent, process_batch
from nodemedic.remediate.decision import Decision, Identity, recent

NODE = Identity(cluster="trn-prod", instance_id="i-0a1b2c3d4e5f60718", source="kmsg")
XID13 = "NVRM: Xid (PCI:0000:2b:00): 13, pid=4242, name=python3, Graphics Exception: ESR 0x1"
XID48 = "NVRM: Xid (PCI:0000:2b:00): 48, pid=4242, name=python3, An uncorrectable ECC error"
DMA = "NEURON_HW_ERR=DMA_ERROR instance-id=i-0a1b2c3d4e5f60718 hostname=ip-10-0-1-23 nd-id=0"
WRITEBACK = "nfs_wb_all+0x5f/0x120 [nfs]"
"""A frame of a task hung in NFS writeback: its rule notifies on the second within 10 min."""


def injected(line: str) -> str:
    """``line`` as the agent ships it when user space wrote it to /dev/kmsg (LOG_USER)."""
    return shipped_message(line, 1)


class MemoryCounter:
    def __init__(self) -> None:
        self.hits: dict[str, dict[str, float]] = {}

    def add(self, key: str, hits: Mapping[str, float], window: int) -> list[float]:
        self.hits[key] = recent({**self.hits.get(key, {}), **hits}, window)
        return list(self.hits[key].values())


def run(
    lines: list[str], *, accept_injected: bool = False
) -> tuple[list[Decision], dict[str, list[str]]]:
    started, result = run_batch(lines, accept_injected=accept_injected)
    return started, {"started": result.started, "superseded": result.superseded}


def run_batch(
    lines: list[str], *, accept_injected: bool = False
) -> tuple[list[Decision], BatchResult]:
    """The decisions ``start`` was given for one batch of ``lines``, and its result."""
    started: list[Decision] = []

    def start(decision: Decision) -> bool:
        fresh = decision.decision_id not in {d.decision_id for d in started}
        started.append(decision)
        return fresh

    result = process_batch(
        NODE,
        [LogEvent(str(i), 1_763_836_200_000 + i * 10, line) for i, line in enumerate(lines)],
        classifier=default_classifier(),
        counter=MemoryCounter(),
        start=start,
        dedup_window=600,
        accept_injected=accept_injected,
    )
    return started, result


def test_the_strongest_action_of_a_batch_wins_over_an_earlier_weaker_one() -> None:
    started, result = run([XID13, XID48, DMA])
    [decision] = started
    assert decision.fault_id == "neuron-dma-error" and decision.action == "replace"
    assert len(result["superseded"]) == 2


def test_an_application_fault_alone_is_notified_without_touching_the_node() -> None:
    [decision], _ = run([XID13])
    assert decision.action == "notify" and decision.health_status == "Schedulable"


def test_benign_lines_start_nothing() -> None:
    started, result = run(["NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05"])
    assert started == [] and result == {"started": [], "superseded": []}


def test_an_injected_replace_line_is_only_notified_and_says_why() -> None:
    started, result = run_batch([injected(DMA)])
    [decision] = started
    assert (decision.fault_id, decision.action) == ("neuron-dma-error", "notify")
    assert decision.health_status == "Schedulable"
    assert decision.evidence_line == (
        "(not logged by the kernel: replace capped to notify, accept_injected_faults is off) "
        f"[injected facility=1] {DMA}"
    )
    assert result.capped == result.started == [decision.decision_id]


def test_a_cluster_that_accepts_injected_faults_acts_on_them() -> None:
    started, result = run_batch([injected(DMA)], accept_injected=True)
    [decision] = started
    assert (decision.action, decision.health_status) == (
        "replace",
        "UnschedulablePendingReplacement",
    )
    assert decision.evidence_line == f"[injected facility=1] {DMA}"
    assert result.capped == []


def test_an_injected_line_never_takes_the_place_of_the_kernels_own_fault() -> None:
    """Written first, in the same window: the kernel line's decision still starts, under
    the name it would have had alone (the injected one neither names it nor outranks it)."""
    started, result = run_batch([injected(XID48), XID48])
    [decision] = started
    [alone], _ = run([XID48])
    assert (decision.action, decision.evidence_line) == ("reboot", XID48)
    assert decision.decision_id == alone.decision_id
    assert len(result.superseded) == 1 and result.capped == result.superseded


def test_injected_lines_do_not_make_up_a_kernel_faults_threshold() -> None:
    # One kernel line and one injected line are not the two the rule waits for.
    assert run([WRITEBACK, injected(WRITEBACK)])[0] == []
    [decision], _ = run([WRITEBACK, injected(WRITEBACK)], accept_injected=True)
    assert (decision.fault_id, decision.count) == ("nfs-writeback-hang", 2)
