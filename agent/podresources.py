"""The kubelet's PodResources API (``v1``, ``List``): which devices each pod was given.

The kubelet's device manager is the one record of which GPU each container holds (a pod's
own fields say how many, never which; docs/deploy.md, "Partial drain"). It serves the record
over gRPC on a unix socket on the node, the API dcgm-exporter and the NVIDIA device plugin's
tools read; it is GA since Kubernetes 1.28 (KEP 606).

The messages are decoded here from the protocol buffers' wire format, as
``k8s.io/kubelet/pkg/apis/podresources/v1/api.proto`` numbers their fields, instead of from
generated code: the agent reads four fields of one response and sends an empty request,
and generated code would pin a protobuf runtime into the node image for that. Fields it
does not read (CPU ids, memory, topology, dynamic resources) are skipped by their wire type,
as any protobuf reader skips unknown fields, so a newer kubelet's additions change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
SERVICE = "v1.PodResourcesLister"
LIST = f"/{SERVICE}/List"
TIMEOUT_SECONDS = 10.0
"""The kubelet answers from memory; one slower than this is stuck, and the next poll asks
again."""

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


class Allocation(NamedTuple):
    """Devices of one resource given to one container of a pod."""

    namespace: str
    pod: str
    resource: str
    device_ids: tuple[str, ...]


class WireError(ValueError):
    """The bytes are not a protocol buffer message."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise WireError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of each field of a message, in order: bytes for a
    length-delimited field, an int for the others (what this module reads is all strings
    and messages; numbers are only skipped)."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            value, at = _varint(data, at)
            yield number, value
        elif kind == _BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise WireError("truncated length-delimited field")
            yield number, data[at : at + size]
            at += size
        elif kind in (_FIXED64, _FIXED32):
            size = 8 if kind == _FIXED64 else 4
            if at + size > len(data):
                raise WireError("truncated fixed-width field")
            yield number, int.from_bytes(data[at : at + size], "little")
            at += size
        else:
            raise WireError(f"wire type {kind} of field {number} is not supported")


def _strings(data: bytes, number: int) -> list[str]:
    return [v.decode() for n, v in fields(data) if n == number and isinstance(v, bytes)]


def _messages(data: bytes, number: int) -> list[bytes]:
    return [v for n, v in fields(data) if n == number and isinstance(v, bytes)]


def decode_list(data: bytes) -> list[Allocation]:
    """``ListPodResourcesResponse`` (pod_resources = 1) as allocations: ``PodResources``
    (name = 1, namespace = 2, containers = 3), ``ContainerResources`` (devices = 2),
    ``ContainerDevices`` (resource_name = 1, device_ids = 2)."""
    found = []
    for pod in _messages(data, 1):
        name, namespace = "".join(_strings(pod, 1)), "".join(_strings(pod, 2))
        for container in _messages(pod, 3):
            for devices in _messages(container, 2):
                found.append(
                    Allocation(
                        namespace,
                        name,
                        "".join(_strings(devices, 1)),
                        tuple(_strings(devices, 2)),
                    )
                )
    return found


def list_allocations(socket: str = SOCKET, timeout: float = TIMEOUT_SECONDS) -> list[Allocation]:
    """Every device allocation the kubelet on this node reports; raises ``grpc.RpcError``
    when it cannot be asked (no socket, the kubelet restarting) and ``WireError`` for an
    answer that is not the message."""
    import grpc  # only an agent that publishes the record pays for gRPC's import

    with grpc.insecure_channel(f"unix://{socket}") as channel:
        call = channel.unary_unary(LIST, response_deserializer=decode_list)
        answer: list[Allocation] = call(b"", timeout=timeout)
        return answer
