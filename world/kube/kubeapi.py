"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-scheduler and the
controllers of kube-controller-manager whose behaviour nodemedic relies on (``disruption``
keeps PodDisruptionBudget status real, ``namespace`` finishes namespace deletion,
``serviceaccount`` makes what ``ServiceAccount`` admission asks for, below).

The binaries are the Kubernetes EKS runs (``KUBE_VERSION``, read from ``build-kube.sh``
beside this module, which builds them from the Go module proxy and caches them; ``make
kube``), with etcd and helm. No kubelet runs: ``kubelet.py`` simulates the kubelets, whose
Nodes the scheduler sees as any others. A pod without ``spec.nodeName`` is bound by the
real kube-scheduler; a pod created with one skips it, as on any cluster. Facts of this
version the callers see: Eviction and PodDisruptionBudget are served as ``policy/v1`` only
(the beta went in 1.25); evicting a Pending pod ignores its PDB; taints are changed on the
Node itself, not on ``/status``; the scheduler ignores a Node's Ready condition and keeps
off only cordoned Nodes and taints a pod does not tolerate.

The API server allows privileged containers (``--allow-privileged``, as EKS does: the
chart's agent DaemonSet is one) and advertises no endpoints for the ``kubernetes``
Service (``--endpoint-reconciler-type=none``: the default reconciler refuses a loopback
address). Admission runs the default plugins but ``TaintNodesByCondition``, whose not-ready
taint on every new Node only the node lifecycle controller, left out here, takes off.
``ServiceAccount`` admission runs, with the ``serviceaccount`` controller that gives each
namespace its ``default`` ServiceAccount: a pod created at once in a new namespace is
admitted when that appears (admission looks again for a moment before it refuses; 0.1 to
0.2 s here), with the projected token volume pods carry on EKS.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kubernetes import client, config, utils

from world.kube.kubeauth import (
    Identity,
    Tls,
    identities,
    serving_cert,
    write_kubeconfig,
    write_token_file,
)

BUILD_SCRIPT = Path(__file__).with_name("build-kube.sh")
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "helm")
"""What ``build-kube.sh`` puts in ``binary_dir()``; helm is for the chart's tests."""
ALWAYS = ("disruption", "namespace", "serviceaccount")
"""The controllers of kube-controller-manager that always run."""
RBAC_MANIFEST = resources.files("lambdas.kube").joinpath("rbac.yaml")
"""What the kube Lambda may do on the cluster (shipped with the Lambda's package)."""
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


class ClusterError(RuntimeError):
    """The control plane could not be built or started; the message carries its log."""


def _kube_version() -> str:
    """The build script's ``KUBE_VERSION=`` line: the version is written there only."""
    found = re.search(r"^KUBE_VERSION=(\S+)$", BUILD_SCRIPT.read_text(), re.MULTILINE)
    if found is None:
        raise ClusterError(f"{BUILD_SCRIPT} sets no KUBE_VERSION")
    return found.group(1)


KUBE_VERSION = _kube_version()


def binary_dir(script: Path = BUILD_SCRIPT) -> Path:
    """Where a build script (``build-kube.sh``, ``build-karpenter.sh``) keeps its binaries:
    the script names the directory (it holds the build revision, which changes with what the
    build produces), so the two never disagree."""
    done = subprocess.run(
        ["bash", str(script), "--print-dest"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise ClusterError(f"{script} --print-dest failed: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def built(found: Path, binaries: Sequence[str] = BINARIES) -> bool:
    return all(os.access(found / name, os.X_OK) for name in binaries)


def ensure_binaries(script: Path = BUILD_SCRIPT, binaries: Sequence[str] = BINARIES) -> Path:
    """The cached binaries of a build script, built first when missing (minutes, once per
    machine). Where the machine has no Go new enough, the script installs one into the
    virtual environment this runs in (``make``'s ``.venv``), unless ``NODEMEDIC_GO_VENV``
    names another."""
    found = binary_dir(script)
    if built(found, binaries):
        return found
    venv = {"NODEMEDIC_GO_VENV": sys.prefix} if sys.prefix != sys.base_prefix else {}
    done = subprocess.run(["bash", str(script)], env={**venv, **os.environ}, check=False)
    if done.returncode != 0 or not built(found, binaries):
        raise ClusterError(f"{script} failed with exit code {done.returncode}")
    return found


@dataclass
class LocalCluster:
    """A running control plane. ``kubeconfig`` is cluster-admin; ``remediator_kubeconfig``
    and ``job_monitor_kubeconfig`` hold only the permissions ``lambdas/kube/rbac.yaml``
    grants the kube Lambda and the job monitor."""

    workdir: Path
    server: str
    kubeconfig: Path
    remediator_kubeconfig: Path
    job_monitor_kubeconfig: Path
    started_in: float
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def api_client(self, kubeconfig: Path | None = None) -> client.ApiClient:
        """A client as cluster-admin, or as the user of another of our kubeconfigs."""
        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))


@contextlib.contextmanager
def local_cluster(
    workdir: Path, *, timeout: float = 60.0, controllers: Sequence[str] = ()
) -> Iterator[LocalCluster]:
    """Start etcd, kube-apiserver, kube-controller-manager and kube-scheduler under
    ``workdir`` and stop every one of them on the way out, whatever ends the block (error,
    Ctrl-C). ``controllers`` run besides those of ``ALWAYS`` (e.g. ``job``: the
    demo's simulated training runs as a real ``batch/v1`` Job, which tests of nodemedic's
    own pod handling must not have). The block begins once the scheduler is ready."""
    bins = ensure_binaries()
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        etcd_port, peer_port, api_port, scheduler_port = free_ports(4)
        processes.append(_etcd(bins, workdir, etcd_port, peer_port))
        tls = serving_cert(workdir)
        who = identities()
        server = f"https://127.0.0.1:{api_port}"
        processes.append(
            _apiserver(
                bins,
                workdir,
                port=api_port,
                etcd_url=f"http://127.0.0.1:{etcd_port}",
                tls=tls,
                tokens=write_token_file(workdir / "tokens.csv", who),
            )
        )
        configs = {
            name: write_kubeconfig(workdir / f"{name}.kubeconfig", server, tls.cert, w.token)
            for name, w in who.items()
        }
        deadline = began + timeout
        trusted = ssl.create_default_context(cafile=str(tls.cert))
        wait_ready(processes, workdir, api_port, trusted, deadline, who=who["admin"])
        processes.append(
            _controller_manager(bins, workdir, configs["controller-manager"], controllers)
        )
        processes.append(_scheduler(bins, workdir, configs["scheduler"], scheduler_port))
        cluster = LocalCluster(
            workdir=workdir,
            server=server,
            kubeconfig=configs["admin"],
            remediator_kubeconfig=configs["remediator"],
            job_monitor_kubeconfig=configs["job-monitor"],
            started_in=0.0,
            processes=processes,
        )
        with cluster.api_client() as api:
            _wait_default_namespace(api, deadline)
            with resources.as_file(RBAC_MANIFEST) as manifest:
                utils.create_from_yaml(api, yaml_file=str(manifest))
        # Its serving certificate is its own, made in memory: nothing to verify it with.
        unverified = ssl._create_unverified_context()  # noqa: S323
        wait_ready(processes, workdir, scheduler_port, unverified, deadline)
        cluster.started_in = time.monotonic() - began
        yield cluster
    finally:
        stop(processes)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def die_with_parent() -> None:
    """Runs in the child: a test run killed hard must not leave a control plane behind."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(
    name: str, args: Sequence[str], workdir: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``args`` run with their output in ``workdir/<name>.log``; ``env`` adds to ours."""
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            list(args),
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us; we stop them in order
            preexec_fn=die_with_parent,  # noqa: PLW1509 - only a prctl call runs there
        )


def _etcd(bins: Path, workdir: Path, port: int, peer_port: int) -> subprocess.Popen[bytes]:
    client_url = f"http://127.0.0.1:{port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    return spawn(
        "etcd",
        [
            str(bins / "etcd"),
            "--name=local",
            f"--data-dir={workdir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=local={peer_url}",
            "--log-level=warn",
        ],
        workdir,
    )


def _apiserver(
    bins: Path, workdir: Path, *, port: int, etcd_url: str, tls: Tls, tokens: Path
) -> subprocess.Popen[bytes]:
    return spawn(
        "kube-apiserver",
        [
            str(bins / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'certs'}",
            f"--tls-cert-file={tls.cert}",
            f"--tls-private-key-file={tls.key}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            f"--service-account-key-file={tls.service_account_key}",
            f"--service-account-signing-key-file={tls.service_account_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--disable-admission-plugins=TaintNodesByCondition",
            "--profiling=false",
            "--v=1",
        ],
        workdir,
    )


def _controller_manager(
    bins: Path, workdir: Path, kubeconfig: Path, controllers: Sequence[str]
) -> subprocess.Popen[bytes]:
    return spawn(
        "kube-controller-manager",
        [
            str(bins / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            "--controllers=" + ",".join((*ALWAYS, *controllers)),
            "--leader-elect=false",
            "--secure-port=0",  # serves nothing: no health or metrics endpoint to bind
            "--v=1",
        ],
        workdir,
    )


def _scheduler(bins: Path, workdir: Path, kubeconfig: Path, port: int) -> subprocess.Popen[bytes]:
    """Serves its health on ``port`` (loopback only): ``/readyz`` says when it has synced."""
    return spawn(
        "kube-scheduler",
        [
            str(bins / "kube-scheduler"),
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--profiling=false",
            "--v=1",
        ],
        workdir,
    )


def wait_ready(
    processes: Sequence[subprocess.Popen[bytes]],
    workdir: Path,
    port: int,
    context: ssl.SSLContext | None,
    deadline: float,
    *,
    who: Identity | None = None,
) -> None:
    """Until ``/readyz`` on ``port`` answers 200 (asked as ``who``; over TLS with
    ``context``, else plain HTTP), while every process started so far runs."""
    headers = {"Authorization": f"Bearer {who.token}"} if who else {}
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise ClusterError(_exit_report(process, workdir))
        connection = (
            http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=2)
            if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        )
        try:
            connection.request("GET", "/readyz", headers=headers)
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass  # not listening yet
        finally:
            connection.close()
        time.sleep(0.1)
    name = _name(processes[-1])
    raise ClusterError(f"{name} not ready on port {port} in time; see {workdir}/*.log")


def _wait_default_namespace(api: client.ApiClient, deadline: float) -> None:
    """The API server creates ``default`` just after it turns ready; callers use it at once."""
    core = client.CoreV1Api(api)
    while True:
        try:
            core.read_namespace("default")
            return
        except client.ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _exit_report(process: subprocess.Popen[bytes], workdir: Path) -> str:
    name = _name(process)
    log = workdir / f"{name}.log"
    tail = log.read_text(errors="replace").splitlines()[-20:] if log.exists() else []
    return f"{name} exited with {process.returncode}:\n" + "\n".join(tail)


def _name(process: subprocess.Popen[bytes]) -> str:
    return Path(str(process.args[0])).name  # type: ignore[index]


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """Newest first, so the API server never outlives etcd's clients nor loses etcd early."""
    for process in reversed(processes):
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
