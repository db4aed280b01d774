"""The agent's device record: the kubelet's PodResources answer read over gRPC on a unix
socket (the local world's kubelet serves it), each GPU's plugin id given its PCI bus id from
a recorded ``nvidia-smi -q -x`` report, and the record written only when it changed."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path

import grpc
import pytest

from agent.poddevices import GPU_RESOURCE, Publisher, gpu_aliases, record
from agent.podresources import Allocation, WireError, decode_list, list_allocations
from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.support.paths import ROOT
from world.kube.podresources import encode_list, serve

REPORTS = ROOT / "tests" / "events" / "nvidia-smi"
L4_X2 = REPORTS / "nvidia-l4-x2-healthy.xml"
H200 = REPORTS / "h200-healthy.xml"


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[Path, dict[str, dict[str, list[str]]]]]:
    held: dict[str, dict[str, list[str]]] = {}
    socket = tmp_path / "pod-resources" / "kubelet.sock"
    server = serve(socket, lambda: held)
    yield socket, held
    server.stop(None)


def test_the_kubelets_allocation_is_read_over_its_socket(
    kubelet: tuple[Path, dict[str, dict[str, list[str]]]],
) -> None:
    socket, held = kubelet
    held["train/worker-0"] = {GPU_RESOURCE: ["0", "1"], "vpc.amazonaws.com/efa": ["efa0"]}
    held["train/worker-1"] = {GPU_RESOURCE: ["2"]}

    found = list_allocations(str(socket))

    assert sorted(found) == [
        Allocation("train", "worker-0", GPU_RESOURCE, ("0", "1")),
        Allocation("train", "worker-0", "vpc.amazonaws.com/efa", ("efa0",)),
        Allocation("train", "worker-1", GPU_RESOURCE, ("2",)),
    ]


def test_no_kubelet_is_an_rpc_error_the_publisher_survives(tmp_path: Path) -> None:
    with pytest.raises(grpc.RpcError):
        list_allocations(str(tmp_path / "absent.sock"), timeout=1.0)


def _delimited(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_fields_a_newer_kubelet_adds_are_skipped() -> None:
    known = encode_list({"ns/pod": {GPU_RESOURCE: ["GPU-1"]}})
    # The same pod with what the agent does not read: a topology (field 3 of
    # ContainerDevices), cpu_ids (field 3 of ContainerResources, varints) and a fixed64
    # field no version has yet.
    devices = (
        _delimited(1, GPU_RESOURCE.encode())
        + _delimited(2, b"GPU-1")
        + _delimited(3, _delimited(1, b""))
    )
    container = _delimited(1, b"main") + _delimited(2, devices) + b"\x18\x07\x18\x08\x21" + bytes(8)
    newer = _delimited(1, _delimited(1, b"pod") + _delimited(2, b"ns") + _delimited(3, container))

    assert (
        decode_list(newer)
        == decode_list(known)
        == [Allocation("ns", "pod", GPU_RESOURCE, ("GPU-1",))]
    )
    with pytest.raises(WireError):
        decode_list(newer[:-3])


def test_each_gpu_is_named_by_its_index_and_uuid_as_the_plugin_names_it() -> None:
    aliases = gpu_aliases(ET.parse(L4_X2).getroot())  # noqa: S314 (a recorded report)

    # nvidia-smi lists GPUs in index order (PCI bus order); minor numbers differ from it.
    assert aliases == {
        "0": "00000000:01:00.0",
        "GPU-c5533cd4-5a60-059e-348d-b6d7466932e4": "00000000:01:00.0",
        "1": "00000000:C1:00.0",
        "GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd": "00000000:C1:00.0",
    }
    h200 = gpu_aliases(ET.parse(H200).getroot())  # noqa: S314
    assert h200["0"] == h200["GPU-e7c4f51d-f979-8d9d-51a7-def5a3f57e24"] == "00000000:00:06.0"


def test_the_record_names_each_gpu_by_its_bus_id_too_and_leaves_out_pods_without_devices() -> None:
    aliases = {"0": "00000000:01:00.0", "GPU-a": "00000000:C1:00.0"}
    allocations = [
        Allocation("train", "worker-0", GPU_RESOURCE, ("0",)),
        Allocation("train", "worker-1", GPU_RESOURCE, ("GPU-a", "MIG-b")),
        Allocation("train", "worker-1", "aws.amazon.com/neuron", ("0",)),
        Allocation("kube-system", "coredns", "cpu", ()),
    ]

    assert record(allocations, aliases) == {
        "train/worker-0": ["0", "00000000:01:00.0"],
        "train/worker-1": ["0", "00000000:C1:00.0", "GPU-a", "MIG-b"],
    }


class Node:
    """The Node's annotations as the publisher writes them."""

    def __init__(self) -> None:
        self.writes: list[Mapping[str, str]] = []

    def annotate_node(self, node: str, annotations: Mapping[str, str]) -> None:
        assert node == "gpu-node-1"
        self.writes.append(annotations)


def _publisher(socket: Path, node: Node, report: Path) -> Publisher:
    cat = shlex.join([sys.executable, "-c", f"print(open({str(report)!r}).read())"])
    return Publisher("gpu-node-1", node, cat, str(socket))  # type: ignore[arg-type]


def test_the_record_is_written_when_it_changes_and_only_then(
    kubelet: tuple[Path, dict[str, dict[str, list[str]]]],
) -> None:
    socket, held = kubelet
    node = Node()
    publisher = _publisher(socket, node, L4_X2)

    assert publisher.once()
    assert json.loads(node.writes[-1][POD_DEVICES_KEY]) == {}
    held["train/worker-0"] = {GPU_RESOURCE: ["1"]}
    assert publisher.once()
    assert not publisher.once()
    assert json.loads(node.writes[-1][POD_DEVICES_KEY]) == {
        "train/worker-0": ["00000000:C1:00.0", "1"]
    }
    del held["train/worker-0"]
    assert publisher.once()
    assert json.loads(node.writes[-1][POD_DEVICES_KEY]) == {}
    assert len(node.writes) == 3


def test_a_kubelet_away_leaves_the_last_record_and_the_publisher_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    node = Node()
    publisher = _publisher(tmp_path / "absent.sock", node, L4_X2)
    stop = threading.Event()
    thread = threading.Thread(target=publisher.run, args=(stop,))
    thread.start()
    stop.set()
    thread.join(timeout=30)

    assert not thread.is_alive()
    assert node.writes == []
    assert "device record not published" in caplog.text
