"""A GPU-level decision is its GPU's: the same Xid on two GPUs of a node in one window is two
faults where each is reset, one where the node is rebooted."""

from __future__ import annotations

from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.batch import LogEvent, process_batch
from nodemedic.remediate.decision import Decision
from tests.unit.lambdas.classify.test_service import NODE, MemoryCounter


def xid46(bus: str) -> str:
    return f"NVRM: Xid (PCI:0000:{bus}:00): 46, pid='<unknown>', name=<unknown>, GPU stopped"


def _two_batches(*, gpu_reset: bool) -> tuple[list[Decision], list[str]]:
    """One batch per GPU, a minute apart: the decisions started, and the duplicates."""
    started: list[Decision] = []
    duplicates: list[str] = []
    counter = MemoryCounter()

    def start(decision: Decision) -> bool:
        fresh = decision.decision_id not in {d.decision_id for d in started}
        if fresh:
            started.append(decision)
        return fresh

    for minute, bus in enumerate(("2b", "3c")):
        at = 1_763_836_200_000 + minute * 60_000
        result = process_batch(
            NODE,
            [LogEvent(str(minute), at, xid46(bus))],
            classifier=default_classifier(),
            counter=counter,
            start=start,
            dedup_window=600,
            gpu_reset=gpu_reset,
        )
        duplicates += result.duplicates
    return started, duplicates


def test_the_same_xid_on_a_second_gpu_in_the_window_is_a_reset_of_its_own() -> None:
    started, duplicates = _two_batches(gpu_reset=True)
    assert [(d.action, d.evidence_line) for d in started] == [
        ("reset", xid46("2b")),
        ("reset", xid46("3c")),
    ]
    assert duplicates == []


def test_a_reboot_is_the_nodes_whichever_gpu_asked_for_it() -> None:
    started, duplicates = _two_batches(gpu_reset=False)
    (decision,) = started
    assert decision.action == "reboot"
    assert duplicates == [decision.decision_id]
