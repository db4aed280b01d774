"""The simulated kubelets' PodResources API: each node's device allocation served over gRPC
on a unix socket, as a real kubelet serves ``/var/lib/kubelet/pod-resources/kubelet.sock``,
so that the node's agent reads it with the client a real node's agent runs
(``agent.podresources``).

The response is encoded in the protocol buffers' wire format with the field numbers of
``k8s.io/kubelet/pkg/apis/podresources/v1/api.proto``: ``ListPodResourcesResponse``
(pod_resources = 1), ``PodResources`` (name = 1, namespace = 2, containers = 3),
``ContainerResources`` (name = 1, devices = 2), ``ContainerDevices`` (resource_name = 1,
device_ids = 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from agent.podresources import SERVICE

Held = Mapping[str, Mapping[str, list[str]]]
"""``<namespace>/<pod>`` → resource → device ids: what a simulated kubelet allocated."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes) -> bytes:
    """A length-delimited field (a string or a message)."""
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def encode_list(held: Held) -> bytes:
    """``ListPodResourcesResponse`` of ``held``: one container per pod, named ``main``."""
    pods = []
    for key, resources in held.items():
        namespace, _, name = key.partition("/")
        devices = b"".join(
            _field(2, _field(1, resource.encode()) + b"".join(_field(2, i.encode()) for i in ids))
            for resource, ids in resources.items()
        )
        container = _field(1, b"main") + devices
        pods.append(
            _field(
                1, _field(1, name.encode()) + _field(2, namespace.encode()) + _field(3, container)
            )
        )
    return b"".join(pods)


def serve(socket: Path, listing: Callable[[], Held]) -> grpc.Server:
    """A started server answering ``List`` on ``socket`` with ``listing()``; ``stop`` it."""

    def answer(_request: bytes, _context: Any) -> Held:
        return listing()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(answer, response_serializer=encode_list)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"List": handler}),)
    )
    socket.parent.mkdir(parents=True, exist_ok=True)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    return server
