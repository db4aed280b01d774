"""Who may talk to the local control plane (``kubeapi.py``), and how: a self-signed serving
certificate for 127.0.0.1 that every kubeconfig trusts as its CA, the key that signs
service-account tokens, and one static bearer token per identity, each with a kubeconfig.

The identities are the ones a real control plane has, as far as a loopback one needs them:
``admin`` and ``controller-manager`` are ``system:masters``; the scheduler is the user
``system:kube-scheduler``, whose permissions come from the API server's own bootstrap RBAC
(ClusterRoles ``system:kube-scheduler`` and ``system:volume-scheduler``), as on EKS; the
``remediator`` and ``job-monitor`` are in nodemedic's groups and may do only what
``lambdas/kube/rbac.yaml`` grants each.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from nodemedic.contracts.kube import JOB_MONITOR_GROUP, REMEDIATOR_GROUP

IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("admin", ("system:masters",)),
    "controller-manager": ("controller-manager", ("system:masters",)),
    "scheduler": ("system:kube-scheduler", ()),
    "remediator": ("remediator", (REMEDIATOR_GROUP,)),
    "job-monitor": ("job-monitor", (JOB_MONITOR_GROUP,)),
}
"""Kubeconfig name → (user name, groups)."""


@dataclass(frozen=True)
class Tls:
    cert: Path
    key: Path
    service_account_key: Path


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...]
    token: str


def serving_cert(workdir: Path) -> Tls:
    """A self-signed certificate for 127.0.0.1 that is also the kubeconfigs' CA, and the
    service-account signing key, under ``workdir/certs``."""
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
    tls = Tls(certs / "serving.crt", certs / "serving.key", certs / "service-account.key")
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(_private_pem(key))
    tls.service_account_key.write_bytes(
        _private_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    )
    return tls


def identities() -> dict[str, Identity]:
    """``IDENTITIES``, each with a fresh random token."""
    return {
        name: Identity(user, groups, secrets.token_hex(16))
        for name, (user, groups) in IDENTITIES.items()
    }


def write_token_file(path: Path, known: dict[str, Identity]) -> Path:
    """The API server's ``--token-auth-file``: ``token,user,uid[,"groups"]`` per line."""
    lines = []
    for who in known.values():
        groups = f',"{",".join(who.groups)}"' if who.groups else ""
        lines.append(f"{who.token},{who.user},{who.user}{groups}\n")
    path.write_text("".join(lines))
    path.chmod(0o600)
    return path


def write_kubeconfig(path: Path, server: str, ca: Path, token: str) -> Path:
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


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
