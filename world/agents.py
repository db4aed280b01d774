"""One ``nodemedic agent`` process per simulated machine, as the DaemonSet runs one per node.

Each agent follows the kernel log of its machine's current boot: a file per boot, empty
when the machine comes up, as the ring buffer of a freshly booted kernel is. A reboot
stops the agent and starts a new one on the new boot's file; a machine that powers off
loses its agent. Processes are started and stopped by one long-lived thread: a child's
death signal (``PR_SET_PDEATHSIG``) follows the thread that forked it, and the callbacks
that ask for agents run on short-lived timer threads.

An agent gets the flags and environment the Helm chart's DaemonSet gives every node
(``world.kube.chart``, rendered once per world by the helm the world's Kubernetes build
makes), so the demo runs what a user installs. The world's values go in as a user's would: ``--set``
(``chart_values``) and, for the flags the chart has no value for, ``agent.extraArgs``
(``extra_args``); what a real node's agent finds on its node is appended for the simulated
one and overrides the chart's (``node_args``, docs/contracts.md "The local world's agents").
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from nodemedic.contracts.env import ENV_IMDS_ENDPOINT
from world.aws.gpus import node_report
from world.kube.chart import agent_args_from_chart, agent_env_from_chart, helm_binary, render
from world.kube.kubeapi import die_with_parent

NODE_REPORT = "nvidia-smi-q-x.xml"
"""The simulated nodes' ``nvidia-smi -q -x`` (``world.aws.gpus.node_report``), in the fleet's
folder: the agents' health checks and device records read it instead of a GPU."""
_STOP_SECONDS = 10.0
LOCAL_IMAGE = "local/nodemedic-agent"
"""The chart requires an image; the world runs the agent from this checkout instead."""


@dataclass(frozen=True)
class AgentSettings:
    cluster: str
    region: str
    endpoint_url: str
    workdir: Path
    flush_interval: float = 0.2
    environment: Mapping[str, str] | None = None
    metadata: Callable[[str], str] | None = None
    """The IMDSv2 endpoint of an instance (``identity.MetadataService.endpoint``): its agent
    registers a key with the identity document served there and signs every event. None:
    the agents ship unsigned (``--no-sign``)."""
    deep_check_at_start: bool = False
    """The chart's ``agent.deepCheckAtStart`` (on by default; the world's nodes run a deep
    check only where it gates them, ``World.deep_checks``)."""
    gpus: int = 8
    """GPUs per simulated node, as its ``nvidia-smi`` reports them."""
    pod_devices: PodDevices | None = None
    """The chart's ``agent.podDevices.enabled``: each agent publishes its Node's device
    record; None: off (the simulated kubelet publishes it)."""


@dataclass(frozen=True)
class PodDevices:
    """What the agents publish their Node's device record with (``world.kube.poddevices``)."""

    server: str
    """The API server's URL."""
    socket: Callable[[str], Path]
    """A Node's PodResources socket, by the Node's name."""
    credentials: Callable[[str, Path], None]
    """Writes the service-account token and CA of the agent on a Node into a folder."""


def chart_values(s: AgentSettings) -> dict[str, str]:
    """The world's ``--set`` values."""
    return {
        "cluster": s.cluster,
        "image.repository": LOCAL_IMAGE,
        "agent.logLevel": "WARNING",
        # One port per agent and eight agents on one machine: none.
        "agent.metrics.port": "0",
        "agent.deepCheckAtStart": "true" if s.deep_check_at_start else "false",
        "agent.podDevices.enabled": "true" if s.pod_devices else "false",
    }


def extra_args(s: AgentSettings) -> list[str]:
    """The world's ``agent.extraArgs``: moto as AWS, quick shipping and stopping, the
    recorded ``nvidia-smi`` report as the GPU check."""
    return [
        f"--region={s.region}",
        f"--endpoint-url={s.endpoint_url}",
        f"--flush-interval={s.flush_interval}",
        "--retry-max-delay=2",
        "--shutdown-grace=2",
        "--check-interval=3600",
        "--checks=nvidia",
        f"--nvidia-smi=cat {s.workdir / NODE_REPORT}",
        *(["--no-sign"] if s.metadata is None else []),
    ]


def chart_agent(s: AgentSettings) -> tuple[list[str], dict[str, str]]:
    """The agent's flags and environment as the chart renders them with the world's values;
    ChartError (helm's words) where helm is missing or refuses."""
    rendered = render(
        helm_binary(), chart_values(s), json_values={"agent.extraArgs": extra_args(s)}
    )
    return agent_args_from_chart(rendered), agent_env_from_chart(rendered)


def node_args(
    instance_id: str, boot_id: str, kmsg: Path, node_dir: Path, devices: tuple[str, Path] | None
) -> list[str]:
    """What a real node's agent finds on its node (its instance id from IMDS, ``/dev/kmsg``,
    the boot id, the state hostPath the chart mounts at ``--state-dir``; with ``devices``,
    its Node's name from the downward API, the kubelet's PodResources socket and the
    service account's mount), given for the simulated one: after the chart's flags, so they
    override them."""
    found = [
        f"--instance-id={instance_id}",
        f"--kmsg={kmsg}",
        f"--boot-id={boot_id}",
        f"--state-dir={node_dir / 'state'}",
    ]
    if devices is not None:
        node, socket = devices
        found += [
            f"--node-name={node}",
            f"--pod-resources-socket={socket}",
            f"--kube-credentials={node_dir / 'serviceaccount'}",
        ]
    return found


@dataclass(frozen=True)
class Boot:
    """One boot of a machine, and the Node it is (empty: not known to the agent)."""

    instance_id: str
    boot_id: str
    node: str = ""


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    kmsg: Path


class AgentFleet:
    """The agents of the local world, by instance id."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        node_report(settings.gpus, settings.workdir / NODE_REPORT)
        self.chart_args, self.chart_env = chart_agent(settings)
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._requests: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="agent-fleet", daemon=True)
        self._thread.start()

    def kmsg(self, instance_id: str) -> Path:
        """The kernel log of the instance's current boot, where faults are injected."""
        with self._lock:
            return self._running[instance_id].kmsg

    def start(
        self, instance_id: str, boot_id: str, extra: Sequence[str] = (), node: str = ""
    ) -> Path:
        """Start the agent of a machine that booted with ``boot_id`` as Node ``node``, with
        ``extra`` agent flags; its kernel log file exists when this returns, the process
        soon after."""
        node_dir = self.settings.workdir / instance_id
        node_dir.mkdir(parents=True, exist_ok=True)
        kmsg = node_dir / f"kmsg-{boot_id}.log"
        kmsg.touch()
        done = threading.Event()

        def spawn() -> None:
            try:
                self._stop_now(instance_id)
                process = self._spawn(Boot(instance_id, boot_id, node), kmsg, node_dir, extra)
                with self._lock:
                    self._running[instance_id] = _Running(process, kmsg)
            finally:
                done.set()

        self._requests.put(spawn)
        done.wait()
        return kmsg

    def stop(self, instance_id: str) -> None:
        """The machine went down: its agent is gone (asynchronously)."""
        self._requests.put(lambda: self._stop_now(instance_id))

    def close(self) -> None:
        """Stop every agent and the fleet's thread."""
        self._requests.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                break
            request()
        # Everything at once: each agent takes a moment to ship what it holds.
        with self._lock:
            running = [r.process for r in self._running.values()]
            self._running.clear()
        for process in running:
            _terminate(process)
        for process in running:
            _reap(process)

    def argv(self, boot: Boot, kmsg: Path, node_dir: Path, extra: Sequence[str]) -> list[str]:
        """The agent's command line: the chart's flags, then the node's own."""
        devices = self.settings.pod_devices
        socket = (boot.node, devices.socket(boot.node)) if devices and boot.node else None
        own = node_args(boot.instance_id, boot.boot_id, kmsg, node_dir, socket)
        return [sys.executable, "-m", "console.cli", "agent", *self.chart_args, *own, *extra]

    def _spawn(
        self, boot: Boot, kmsg: Path, node_dir: Path, extra: Sequence[str]
    ) -> subprocess.Popen[bytes]:
        s = self.settings
        instance_id, node = boot.instance_id, boot.node
        args = self.argv(boot, kmsg, node_dir, extra)
        environment = {**os.environ, **self.chart_env, "AWS_EC2_METADATA_DISABLED": "true"}
        environment.update(s.environment or {})
        if s.metadata is not None:
            environment[ENV_IMDS_ENDPOINT] = s.metadata(instance_id)
        if s.pod_devices is not None and node:
            # What Kubernetes gives every pod: the API server's address, and the mount.
            server = urlsplit(s.pod_devices.server)
            environment["KUBERNETES_SERVICE_HOST"] = server.hostname or ""
            environment["KUBERNETES_SERVICE_PORT"] = str(server.port or 443)
            s.pod_devices.credentials(node, node_dir / "serviceaccount")
        with (node_dir / "agent.log").open("ab") as log:
            return subprocess.Popen(
                args,
                # Its machine's directory: ``-m console.cli`` finds the installed package,
                # whatever the caller's directory holds.
                cwd=node_dir,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the demo, which stops the agents
                preexec_fn=die_with_parent,  # noqa: PLW1509 - only a prctl call runs there
            )

    def _stop_now(self, instance_id: str) -> None:
        with self._lock:
            running = self._running.pop(instance_id, None)
        if running is None or running.process.poll() is not None:
            return
        _terminate(running.process)
        _reap(running.process)


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the agent's whole process group (its own session), as a container's stop
    reaches every process in it: a tool its deep check runs must not outlive the machine."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=_STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
