"""The agent's device record end to end on the real kube-apiserver: the agent's own publisher
(``agent.poddevices``) reads a kubelet's PodResources socket, writes the record on its Node
with a token bound to its pod under the chart's admission policy, and the GPU-level drain
then evicts only the pod on the GPU a fault line names."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from agent.poddevices import GPU_RESOURCE, Kube, Publisher, PublishError
from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.integration.lambdas.kube.test_drain import drain_event
from tests.support.kube import Invoke, Node, bind_pod, device_record, exists, running, wait_for
from tests.support.paths import ROOT
from tests.support.pod_devices_policy import agent_credential, bound_token
from world.kube.podresources import serve

pytestmark = pytest.mark.kube

L4_X2 = ROOT / "tests" / "events" / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
SECOND_GPU = "00000000:C1:00.0"
"""GPU index 1 of the recorded report, as an Xid line names it (``PCI:0000:c1:00``)."""


Held = dict[str, dict[str, list[str]]]


@pytest.fixture
def pod_resources(tmp_path: Path) -> Iterator[tuple[Path, Held]]:
    """A kubelet's PodResources socket serving ``held`` (empty until a test fills it)."""
    held: Held = {}
    socket = tmp_path / "pod-resources" / "kubelet.sock"
    server = serve(socket, lambda: held)
    yield socket, held
    server.stop(None)


def _publisher(
    admin: client.ApiClient, user: str, socket: Path, *, on: str, writes: str
) -> Publisher:
    """The agent on node ``on`` as its pod runs it (its bound token and the API server's CA
    in the folder Kubernetes mounts them in, the recorded report as its ``nvidia-smi``),
    writing the Node ``writes``."""
    credentials = socket.parent.parent / "serviceaccount"
    credentials.mkdir()
    (credentials / "token").write_text(bound_token(admin, user, on))
    (credentials / "ca.crt").write_bytes(Path(admin.configuration.ssl_ca_cert).read_bytes())
    report = shlex.join([sys.executable, "-c", f"print(open({str(L4_X2)!r}).read())"])
    return Publisher(writes, Kube(admin.configuration.host, credentials), report, str(socket))


def test_the_agent_publishes_its_nodes_record_and_the_reset_drain_uses_it(
    admin: client.ApiClient,
    namespace: str,
    new_node: Callable[..., Node],
    invoke: Invoke,
    pod_resources: tuple[Path, Held],
) -> None:
    socket, held = pod_resources
    core = client.CoreV1Api(admin)
    node = new_node(devices={})  # the agent's record alone, none of the simulated kubelet's
    for rank in ("rank-0", "rank-1"):
        bind_pod(core, namespace, rank, node.name)
    wait_for(lambda: running(core, namespace, "rank-0") and running(core, namespace, "rank-1"))
    held[f"{namespace}/rank-0"] = {GPU_RESOURCE: ["GPU-c5533cd4-5a60-059e-348d-b6d7466932e4"]}
    held[f"{namespace}/rank-1"] = {GPU_RESOURCE: ["GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd"]}

    with agent_credential(admin, namespace, node.name) as user:
        assert _publisher(admin, user, socket, on=node.name, writes=node.name).once()

    assert SECOND_GPU in device_record(core, node.name)[f"{namespace}/rank-1"]
    done = invoke(drain_event(node.name, settle=10) | {"devices": [SECOND_GPU]})
    assert done["evicted"] == [f"{namespace}/rank-1"]
    wait_for(lambda: not exists(core, namespace, "rank-1"), what="rank-1 evicted")
    assert running(core, namespace, "rank-0"), "the pod on the other GPU keeps running"


def test_the_policy_keeps_an_agent_to_its_own_node(
    admin: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    new_node: Callable[..., Node],
    pod_resources: tuple[Path, Held],
) -> None:
    own, other = new_node(devices={}), new_node(devices={})
    with agent_credential(admin, namespace, own.name) as user:
        agent = _publisher(admin, user, pod_resources[0], on=own.name, writes=other.name)
        with pytest.raises(PublishError, match="may write only its own Node"):
            agent.once()

    assert POD_DEVICES_KEY not in (core.read_node(other.name).metadata.annotations or {})
