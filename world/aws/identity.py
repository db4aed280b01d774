"""The local world's instance identity: a simulated IMDSv2 that serves each machine its
identity document, signed by a test authority that stands in for AWS.

The authority's key pair is made here, for the local world and the tests, and is never
AWS's: a cluster trusts it only where its setting ``identity_certificates`` names the
authority's certificate (the demo's cluster does). Served at ``<endpoint>/<instance-id>``,
so one server answers every machine, each agent pointed at its own prefix with
``AWS_EC2_METADATA_SERVICE_ENDPOINT``.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

ACCOUNT = "123456789012"


@dataclass(frozen=True)
class LocalAuthority:
    """A key pair and self-signed certificate that sign identity documents as AWS would."""

    key: rsa.RSAPrivateKey
    certificate_pem: str

    def sign(self, document: str) -> str:
        """Base64 of RSA PKCS#1 v1.5 over SHA-256 of ``document``, as IMDS serves it."""
        raw = self.key.sign(document.encode(), padding.PKCS1v15(), hashes.SHA256())
        return base64.b64encode(raw).decode("ascii")

    def write_certificate(self, path: Path) -> Path:
        path.write_text(self.certificate_pem, encoding="ascii")
        return path


def local_authority(
    not_before: datetime | None = None, lifetime: timedelta = timedelta(days=3650)
) -> LocalAuthority:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "nodemedic local test")])
    start = not_before or datetime.now(UTC) - timedelta(days=1)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + lifetime)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")
    return LocalAuthority(key, pem)


def identity_document(instance_id: str, region: str) -> str:
    """An instance identity document in AWS's shape (pretty-printed, as IMDS serves it)."""
    return json.dumps(
        {
            "accountId": ACCOUNT,
            "architecture": "x86_64",
            "availabilityZone": f"{region}a",
            "imageId": "ami-0123456789abcdef0",
            "instanceId": instance_id,
            "instanceType": "trn1.32xlarge",
            "pendingTime": "2026-11-22T18:00:00Z",
            "privateIp": "10.0.0.1",
            "region": region,
            "version": "2017-09-30",
        },
        indent=2,
    )


class MetadataService:
    """IMDSv2 for every machine of the local world: ``/<instance-id>/latest/...``."""

    def __init__(self, authority: LocalAuthority, region: str) -> None:
        self.authority = authority
        self.region = region
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                self._answer("token" if self.path.endswith("/latest/api/token") else None)

            def do_GET(self) -> None:
                self._answer(service.answer(self.path))

            def _answer(self, body: str | None) -> None:
                data = (body or "").encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def endpoint(self, instance_id: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/{instance_id}"

    def answer(self, path: str) -> str | None:
        instance_id, _, rest = path.lstrip("/").partition("/")
        document = identity_document(instance_id, self.region)
        return {
            "latest/meta-data/instance-id": instance_id,
            "latest/meta-data/placement/region": self.region,
            "latest/dynamic/instance-identity/document": document,
            "latest/dynamic/instance-identity/signature": self.authority.sign(document),
        }.get(rest)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
