"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and the two controllers
whose behaviour nodemedic relies on (``disruption`` keeps PodDisruptionBudget status real,
``namespace`` finishes namespace deletion).

The binaries are v1.20.2, built from Debian's source package by ``build-kube.sh`` (beside
this module, ``make kube``) and cached. No scheduler or kubelet runs: ``kubelet.py``
simulates the kubelets and callers bind pods by setting ``spec.nodeName``. Facts of this
version the callers see: Eviction and PodDisruptionBudget are served as ``policy/v1beta1``
only; evicting a Pending pod ignores its PDB; taints are changed on the Node itself, not on
``/status``; custom resources are served (the build swaps in a reflect2 that Go 1.19 does
not crash).

Admission runs the default plugins except two that need controllers this plane leaves out:
``ServiceAccount`` (every pod would wait for a token secret) and ``TaintNodesByCondition``
(the not-ready taint it puts on new Nodes is removed by the node lifecycle controller).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import http.client
import ipaddress
import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client, config, utils

from nodemedic.contracts.kube import REMEDIATOR_GROUP

KUBE_VERSION = "1.20.2"
ETCD = Path("/usr/bin/etcd")
BUILD_SCRIPT = Path(__file__).with_name("build-kube.sh")
RBAC_MANIFEST = resources.files("lambdas.kube").joinpath("rbac.yaml")
"""What the kube Lambda may do on the cluster (shipped with the Lambda's package)."""
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


class ClusterError(RuntimeError):
    """The control plane could not be built or started; the message carries its log."""


def binary_dir() -> Path:
    """Where ``build-kube.sh`` keeps the binaries: the script names the directory (it holds
    the build revision, which changes with what the build produces), so the two never
    disagree."""
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print-dest"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise ClusterError(f"{BUILD_SCRIPT} --print-dest failed: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def ensure_binaries() -> Path:
    """The cached binaries, built first when missing (minutes, once per machine)."""
    found = binary_dir()
    wanted = [found / "kube-apiserver", found / "kube-controller-manager", ETCD]
    if all(os.access(path, os.X_OK) for path in wanted):
        return found
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], check=False)
    if done.returncode != 0:
        raise ClusterError(f"{BUILD_SCRIPT} failed with exit code {done.returncode}")
    return found


@dataclass
class LocalCluster:
    """A running control plane. ``kubeconfig`` is cluster-admin; ``remediator_kubeconfig``
    holds only the permissions ``lambdas/kube/rbac.yaml`` grants the kube Lambda."""

    workdir: Path
    server: str
    kubeconfig: Path
    remediator_kubeconfig: Path
    started_in: float
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def api_client(self, kubeconfig: Path | None = None) -> client.ApiClient:
        """A client as cluster-admin, or as the user of another of our kubeconfigs."""
        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))


@contextlib.contextmanager
def local_cluster(
    workdir: Path, *, timeout: float = 60.0, controllers: Sequence[str] = ()
) -> Iterator[LocalCluster]:
    """Start etcd, kube-apiserver and kube-controller-manager under ``workdir`` and stop
    every one of them on the way out, whatever ends the block (error, Ctrl-C).
    ``controllers`` run besides ``disruption`` and ``namespace`` (e.g. ``job``: the demo's
    simulated training runs as a real ``batch/v1`` Job, which tests of nodemedic's own
    pod handling must not have)."""
    bins = ensure_binaries()
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        etcd_port, peer_port, api_port = _free_ports(3)
        processes.append(_etcd(workdir, etcd_port, peer_port))
        tls = _serving_cert(workdir)
        tokens = _tokens()
        server = f"https://127.0.0.1:{api_port}"
        processes.append(
            _apiserver(
                bins,
                workdir,
                port=api_port,
                etcd_url=f"http://127.0.0.1:{etcd_port}",
                tls=tls,
                tokens=tokens,
            )
        )
        configs = {
            user: _write_kubeconfig(workdir / f"{user}.kubeconfig", server, tls.cert, token)
            for user, (token, _) in tokens.items()
        }
        _wait_ready(
            processes,
            workdir,
            port=api_port,
            ca=tls.cert,
            token=tokens["admin"][0],
            timeout=timeout,
        )
        processes.append(
            _controller_manager(bins, workdir, configs["controller-manager"], controllers)
        )
        cluster = LocalCluster(
            workdir=workdir,
            server=server,
            kubeconfig=configs["admin"],
            remediator_kubeconfig=configs["remediator"],
            started_in=0.0,
            processes=processes,
        )
        with cluster.api_client() as api:
            _wait_default_namespace(api, began + timeout)
            with resources.as_file(RBAC_MANIFEST) as manifest:
                utils.create_from_yaml(api, yaml_file=str(manifest))
        cluster.started_in = time.monotonic() - began
        yield cluster
    finally:
        _stop(processes)


@dataclass(frozen=True)
class _Tls:
    cert: Path
    key: Path
    service_account_key: Path


def _free_ports(count: int) -> list[int]:
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


def _spawn(name: str, args: Sequence[str], workdir: Path) -> subprocess.Popen[bytes]:
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us; we stop them in order
            preexec_fn=die_with_parent,  # noqa: PLW1509 - only a prctl call runs there
        )


def _etcd(workdir: Path, port: int, peer_port: int) -> subprocess.Popen[bytes]:
    client_url = f"http://127.0.0.1:{port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    return _spawn(
        "etcd",
        [
            str(ETCD),
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
    bins: Path,
    workdir: Path,
    *,
    port: int,
    etcd_url: str,
    tls: _Tls,
    tokens: dict[str, tuple[str, str]],
) -> subprocess.Popen[bytes]:
    token_file = workdir / "tokens.csv"
    token_file.write_text(
        "".join(f'{token},{user},{user},"{groups}"\n' for user, (token, groups) in tokens.items())
    )
    return _spawn(
        "kube-apiserver",
        [
            str(bins / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            "--insecure-port=0",
            f"--cert-dir={workdir / 'certs'}",
            f"--tls-cert-file={tls.cert}",
            f"--tls-private-key-file={tls.key}",
            f"--token-auth-file={token_file}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={tls.service_account_key}",
            f"--service-account-signing-key-file={tls.service_account_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--profiling=false",
            "--v=1",
        ],
        workdir,
    )


def _controller_manager(
    bins: Path, workdir: Path, kubeconfig: Path, controllers: Sequence[str]
) -> subprocess.Popen[bytes]:
    return _spawn(
        "kube-controller-manager",
        [
            str(bins / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            "--controllers=" + ",".join(("disruption", "namespace", *controllers)),
            "--leader-elect=false",
            "--secure-port=0",
            "--port=0",
            "--v=1",
        ],
        workdir,
    )


def _tokens() -> dict[str, tuple[str, str]]:
    """Static bearer tokens by user name, with the user's groups."""
    return {
        "admin": (secrets.token_hex(16), "system:masters"),
        "controller-manager": (secrets.token_hex(16), "system:masters"),
        "remediator": (secrets.token_hex(16), REMEDIATOR_GROUP),
    }


def _serving_cert(workdir: Path) -> _Tls:
    """A self-signed certificate for 127.0.0.1 that is also the kubeconfig's CA."""
    certs = workdir / "certs"
    certs.mkdir(exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nodemedic-local")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    tls = _Tls(certs / "serving.crt", certs / "serving.key", certs / "service-account.key")
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(_private_pem(key))
    tls.service_account_key.write_bytes(
        _private_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    )
    return tls


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _write_kubeconfig(path: Path, server: str, ca: Path, token: str) -> Path:
    kubeconfig: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": path.stem, "user": {"token": token}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": path.stem}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(kubeconfig))
    path.chmod(0o600)
    return path


def _wait_ready(
    processes: Sequence[subprocess.Popen[bytes]],
    workdir: Path,
    *,
    port: int,
    ca: Path,
    token: str,
    timeout: float,
) -> None:
    context = ssl.create_default_context(cafile=str(ca))
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise ClusterError(_exit_report(process, workdir))
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=2)
        try:
            connection.request("GET", "/readyz", headers=headers)
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass  # not listening yet
        finally:
            connection.close()
        time.sleep(0.1)
    raise ClusterError(f"kube-apiserver not ready after {timeout:.0f}s; see {workdir}/*.log")


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
    name = Path(str(process.args[0])).name  # type: ignore[index]
    log = workdir / f"{name}.log"
    tail = log.read_text(errors="replace").splitlines()[-20:] if log.exists() else []
    return f"{name} exited with {process.returncode}:\n" + "\n".join(tail)


def _stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """Newest first, so the API server never outlives etcd's clients nor loses etcd early."""
    for process in reversed(processes):
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
