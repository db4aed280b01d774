"""The agent's device record end to end on the real kube-apiserver: the agent's own publisher
(``agent.poddevices``) reads a kubelet's PodResources socket, writes the record on its Node
with a token bound to its pod under the chart's admission policy, and the GPU-level drain
then evicts only the pod on the GPU a fault line names. The publisher and the socket's
server each run in a process of their own, as on a node (``world.kube.podresources``)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from agent.poddevices import GPU_RESOURCE
from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.integration.lambdas.kube.test_drain import drain_event
from tests.support.kube import Invoke, Node, bind_pod, device_record, exists, running, wait_for
from tests.support.paths import ROOT
from tests.support.pod_devices_policy import agent_credential, bound_token
from world.kube.podresources import Host

pytestmark = pytest.mark.kube

L4_X2 = ROOT / "tests" / "events" / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
SECOND_GPU = "00000000:C1:00.0"
"""GPU index 1 of the recorded report, as an Xid line names it (``PCI:0000:c1:00``)."""


PUBLISH_ONCE = """
import sys
from pathlib import Path
from agent.poddevices import Kube, Publisher
writes, server, credentials, report, socket = sys.argv[1:]
print(Publisher(writes, Kube(server, Path(credentials)), report, socket).once())
"""


@pytest.fixture
def pod_resources(tmp_path: Path) -> Iterator[Host]:
    """A kubelet's PodResources sockets (empty until a test publishes an allocation)."""
    host = Host(tmp_path / "pod-resources")
    yield host
    host.close()


def _publish(
    admin: client.ApiClient, user: str, socket: Path, *, on: str, writes: str
) -> subprocess.CompletedProcess[str]:
    """The agent on node ``on`` as its pod runs it (its bound token and the API server's CA
    in the folder Kubernetes mounts them in, the recorded report as its ``nvidia-smi``),
    writing the Node ``writes`` once."""
    credentials = socket.parent.parent / "serviceaccount"
    credentials.mkdir()
    (credentials / "token").write_text(bound_token(admin, user, on))
    (credentials / "ca.crt").write_bytes(Path(admin.configuration.ssl_ca_cert).read_bytes())
    report = shlex.join([sys.executable, "-c", f"print(open({str(L4_X2)!r}).read())"])
    server = admin.configuration.host
    return subprocess.run(
        [sys.executable, "-c", PUBLISH_ONCE, writes, server, str(credentials), report, str(socket)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_agent_publishes_its_nodes_record_and_the_reset_drain_uses_it(
    admin: client.ApiClient,
    namespace: str,
    new_node: Callable[..., Node],
    invoke: Invoke,
    pod_resources: Host,
) -> None:
    core = client.CoreV1Api(admin)
    node = new_node(devices={})  # the agent's record alone, none of the simulated kubelet's
    for rank in ("rank-0", "rank-1"):
        bind_pod(core, namespace, rank, node.name)
    wait_for(lambda: running(core, namespace, "rank-0") and running(core, namespace, "rank-1"))
    pod_resources.publish(
        0,
        {
            f"{namespace}/rank-0": {GPU_RESOURCE: ["GPU-c5533cd4-5a60-059e-348d-b6d7466932e4"]},
            f"{namespace}/rank-1": {GPU_RESOURCE: ["GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd"]},
        },
    )

    with agent_credential(admin, namespace, node.name) as user:
        published = _publish(admin, user, pod_resources.socket(0), on=node.name, writes=node.name)
    assert published.stdout.strip() == "True", published.stderr

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
    pod_resources: Host,
) -> None:
    own, other = new_node(devices={}), new_node(devices={})
    pod_resources.publish(0, {})
    with agent_credential(admin, namespace, own.name) as user:
        done = _publish(admin, user, pod_resources.socket(0), on=own.name, writes=other.name)
    assert done.returncode != 0
    assert "PublishError" in done.stderr
    assert "may write only its own Node" in done.stderr

    assert POD_DEVICES_KEY not in (core.read_node(other.name).metadata.annotations or {})
