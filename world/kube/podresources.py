"""The simulated kubelets' PodResources API: each node's device allocation served over gRPC
on a unix socket, as a real kubelet serves ``/var/lib/kubelet/pod-resources/kubelet.sock``,
so that the node's agent reads it with the client a real node's agent runs
(``agent.podresources``).

The servers run in a process of their own (``Host``), as a real kubelet runs outside its
node's other programs. This is a precaution: gRPC's core keeps polling threads alive for
as long as a server is, and the world's process forks (every agent, every tool) beside
them all run long; the world's process never loads gRPC at all. The simulated kubelet
writes each node's allocation to a file in the sockets' folder (``<index>.json``); the host
serves ``<index>.sock`` for each such file and answers every ``List`` from the file's
current contents.

The response is encoded in the protocol buffers' wire format with the field numbers of
``k8s.io/kubelet/pkg/apis/podresources/v1/api.proto``: ``ListPodResourcesResponse``
(pod_resources = 1), ``PodResources`` (name = 1, namespace = 2, containers = 3),
``ContainerResources`` (name = 1, devices = 2), ``ContainerDevices`` (resource_name = 1,
device_ids = 2)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.podresources import SERVICE
from world.kube.kubeapi import spawn, stop

if TYPE_CHECKING:
    import grpc

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
    import grpc  # the host's process alone pays for gRPC (see the module's docstring)

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


SCAN_SECONDS = 0.05
"""How often the host looks for nodes to start or stop serving."""
READY_SECONDS = 120.0
"""The longest a new node's socket may take to appear: the host's start on a busy machine."""


def _read(record: Path) -> Held:
    """A node's allocation as last written; none once the node is forgotten."""
    try:
        held: Held = json.loads(record.read_text())
    except FileNotFoundError:
        return {}
    return held


def host(folder: Path) -> None:
    """Serves every node whose allocation file is in ``folder``, until killed: the loop of
    the host's process (``python -m world.kube.podresources FOLDER``)."""
    servers: dict[Path, grpc.Server] = {}
    while True:
        records = set(folder.glob("*.json"))
        for record in sorted(records - servers.keys()):
            servers[record] = serve(record.with_suffix(".sock"), functools.partial(_read, record))
        for record in servers.keys() - records:
            servers.pop(record).stop(None)
            record.with_suffix(".sock").unlink(missing_ok=True)
        time.sleep(SCAN_SECONDS)


def socket_path(folder: Path, index: int) -> Path:
    """Node ``index``'s socket in ``folder`` (short: a unix socket's path is ≤ 107 bytes)."""
    return folder / f"{index}.sock"


class Host:
    """The process serving a world's PodResources sockets in ``folder``; ``close`` it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._process: subprocess.Popen[bytes] = spawn(
            "pod-resources", [sys.executable, "-m", __name__, str(folder)], folder
        )

    def socket(self, index: int) -> Path:
        return socket_path(self.folder, index)

    def publish(self, index: int, held: Held) -> None:
        """Node ``index`` answers ``held`` from now on; the first time, once its socket is
        up (its agent may ask at once)."""
        record = self.folder / f"{index}.json"
        first = not record.exists()
        written = record.with_suffix(".tmp")
        written.write_text(json.dumps(held))
        written.replace(record)  # a reader sees the old allocation or the new, whole
        if first:
            self._wait_for(self.socket(index))

    def withdraw(self, index: int) -> None:
        """Node ``index`` is gone: the host stops serving it."""
        (self.folder / f"{index}.json").unlink(missing_ok=True)

    def close(self) -> None:
        stop([self._process])

    def _wait_for(self, socket: Path) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while not socket.exists():
            if self._process.poll() is not None:
                log = (self.folder / "pod-resources.log").read_text(errors="replace")
                raise RuntimeError(f"the PodResources host exited: {log[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{socket} not served within {READY_SECONDS:.0f}s")
            time.sleep(SCAN_SECONDS)


if __name__ == "__main__":
    host(Path(sys.argv[1]))
