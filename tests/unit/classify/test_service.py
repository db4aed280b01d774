"""process_batch with in-memory stand-ins: which decision a batch of one node's lines starts."""

from __future__ import annotations

from collections.abc import Mapping

from lambdas.classify.service import LogEvent, process_batch
from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.decision import Decision, Identity, recent

NODE = Identity(cluster="trn-prod", instance_id="i-0a1b2c3d4e5f60718", source="kmsg")
XID13 = "NVRM: Xid (PCI:0000:2b:00): 13, pid=4242, name=python3, Graphics Exception: ESR 0x1"
XID48 = "NVRM: Xid (PCI:0000:2b:00): 48, pid=4242, name=python3, An uncorrectable ECC error"
DMA = "kernel: [ 98.1] neuron: NEURON_HW_ERR=DMA_ERROR nd0 nc1 queue 3 error"


class MemoryCounter:
    def __init__(self) -> None:
        self.hits: dict[str, dict[str, float]] = {}

    def add(self, key: str, hits: Mapping[str, float], window: int) -> list[float]:
        self.hits[key] = recent({**self.hits.get(key, {}), **hits}, window)
        return list(self.hits[key].values())


def run(lines: list[str]) -> tuple[list[Decision], dict[str, list[str]]]:
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
    )
    return started, {"started": result.started, "superseded": result.superseded}


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
