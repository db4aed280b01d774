"""The node's device record (``nodemedic.io/pod-devices``): which pod holds which device, as
the kubelet allocated them, published on the agent's own Node for the GPU-level drain.

The drain of a GPU reset evicts only the pods this record names as holders of the GPU the
fault line names (docs/deploy.md, "Partial drain"). The line names the GPU by its PCI bus
id; the kubelet knows the device plugin's ids (the NVIDIA plugin's UUIDs, or indices with
its ``index`` strategy). So each GPU id is recorded with its bus id beside it, from
``nvidia-smi``'s report (the GPUs in index order, each with its ``uuid``).

Opt-in (``--pod-devices``, the chart's ``agent.podDevices.enabled``): it is the agent's one
write to Kubernetes, made with its pod's service-account token, which the chart's admission
policy lets change this one annotation of this one Node and nothing else (docs/security.md).
A record that cannot be read or published leaves the last one in place: a pod it misses
keeps its GPU busy, and the reset refuses a busy GPU and reboots the node instead.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import urllib3

from agent.podresources import Allocation, WireError, list_allocations
from nodemedic.contracts.kube import POD_DEVICES_KEY
from nodemedic.health.gpu_reset import normalized

log = logging.getLogger(__name__)

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where Kubernetes mounts a pod's service-account token and the API server's CA."""
POLL_SECONDS = 5.0
"""How often the kubelet is asked: a pod that started since the last ask is missing from
the record for at most this long (and then the reset finds its GPU busy and reboots)."""
GPU_RESOURCE = "nvidia.com/gpu"
MERGE_PATCH = "application/merge-patch+json"
FIELD_MANAGER = "nodemedic-agent"
"""Who wrote the record, as the Node's managedFields say."""


class PublishError(RuntimeError):
    """The API server refused or could not be reached."""


def gpu_aliases(report: ET.Element) -> dict[str, str]:
    """Each GPU's device plugin ids (its index, its UUID) → its PCI bus id, as
    ``nodemedic.health.gpu_reset`` writes it, from an ``nvidia-smi -q -x`` report."""
    aliases: dict[str, str] = {}
    for index, gpu in enumerate(report.findall("gpu")):
        bus = gpu.get("id")
        if not bus:
            continue
        aliases[str(index)] = normalized(bus)
        uuid = (gpu.findtext("uuid") or "").strip()
        if uuid:
            aliases[uuid] = normalized(bus)
    return aliases


def record(allocations: Iterable[Allocation], aliases: Mapping[str, str]) -> dict[str, list[str]]:
    """``<namespace>/<pod>`` → the device ids it holds, a GPU's bus id beside its plugin id;
    pods that hold no device are left out."""
    held: dict[str, set[str]] = {}
    for given in allocations:
        if not given.device_ids:
            continue
        ids = held.setdefault(f"{given.namespace}/{given.pod}", set())
        ids.update(given.device_ids)
        if given.resource == GPU_RESOURCE:
            ids.update(aliases[i] for i in given.device_ids if i in aliases)
    return {pod: sorted(ids) for pod, ids in sorted(held.items())}


@dataclass(frozen=True)
class Kube:
    """The API server as the agent's pod reaches it: the address Kubernetes puts in every
    pod's environment, the token and CA it mounts (read at each write: the token rotates)."""

    server: str
    credentials: Path = SERVICE_ACCOUNT

    @classmethod
    def in_cluster(cls, credentials: Path = SERVICE_ACCOUNT) -> Kube:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise PublishError("KUBERNETES_SERVICE_HOST is not set: not in a pod")
        address = f"[{host}]" if ":" in host else host  # an IPv6 cluster's service address
        return cls(f"https://{address}:{port}", credentials)

    def annotate_node(self, node: str, annotations: Mapping[str, str]) -> None:
        token = (self.credentials / "token").read_text(encoding="utf-8").strip()
        pool = urllib3.PoolManager(
            cert_reqs="CERT_REQUIRED", ca_certs=str(self.credentials / "ca.crt")
        )
        try:
            answer = pool.request(
                "PATCH",
                f"{self.server}/api/v1/nodes/{quote(node, safe='')}?fieldManager={FIELD_MANAGER}",
                body=json.dumps({"metadata": {"annotations": dict(annotations)}}),
                headers={"Authorization": f"Bearer {token}", "Content-Type": MERGE_PATCH},
                timeout=10.0,
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise PublishError(f"the API server is not reachable: {exc}") from exc
        if answer.status >= 300:
            try:
                said = json.loads(answer.data).get("message", "")
            except ValueError:
                said = answer.data[:200].decode(errors="replace")
            raise PublishError(f"the API server answered {answer.status}: {said}")


@dataclass
class Publisher:
    """Asks the kubelet every ``POLL_SECONDS`` and writes the record whenever it changed."""

    node: str
    kube: Kube
    nvidia_smi: str
    socket: str
    published: str | None = None
    aliases: dict[str, str] | None = None
    unmapped: frozenset[str] = frozenset()
    """GPU ids the last report did not name (MIG devices): asked about again only when
    others appear, not at every poll."""

    def once(self) -> bool:
        """Ask and publish if changed; True when it wrote."""
        allocations = list_allocations(self.socket)
        gpus = {i for a in allocations if a.resource == GPU_RESOURCE for i in a.device_ids}
        if self.aliases is None or not gpus - self.aliases.keys() <= self.unmapped:
            self.aliases = self._read_aliases()
            self.unmapped = frozenset(gpus - self.aliases.keys())
        text = json.dumps(record(allocations, self.aliases), separators=(",", ":"))
        if text == self.published:
            return False
        self.kube.annotate_node(self.node, {POD_DEVICES_KEY: text})
        self.published = text
        return True

    def run(self, stop: threading.Event) -> None:
        import grpc

        said = ""
        while True:
            try:
                if self.once():
                    log.info("published the device record of %s", self.node)
                said = ""
            except (grpc.RpcError, WireError, PublishError, OSError) as exc:
                if str(exc) != said:  # each new trouble once, not every poll
                    log.warning("device record not published: %s", exc)
                said = str(exc)
            if stop.wait(POLL_SECONDS):
                return

    def _read_aliases(self) -> dict[str, str]:
        """The GPUs' ids from ``nvidia-smi``'s report; none (plugin ids only) if it fails."""
        try:
            done = subprocess.run(
                shlex.split(self.nvidia_smi), capture_output=True, timeout=60, check=True
            )
            return gpu_aliases(ET.fromstring(done.stdout))  # noqa: S314 (nvidia-smi's own)
        except (OSError, subprocess.SubprocessError, ET.ParseError, ValueError) as exc:
            log.warning("GPU ids not mapped to PCI bus ids: %s", exc)
            return {}


def start(publisher: Publisher, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=publisher.run, args=(stop,), name="pod-devices", daemon=True)
    thread.start()
    return thread
