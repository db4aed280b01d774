"""A validating admission webhook that fails, the way a cluster's policy engine does when its
pods are down or overloaded: the real kube-apiserver calls it on every write to one Node and,
with ``failurePolicy: Fail``, answers the writer HTTP 500. It fails the remediator's first
``refusals`` writes and admits everything else, so a test knows how many refusals there were
however fast or slow the retries come."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kubernetes import client

from world.kube.kubeauth import IDENTITIES

REMEDIATOR = IDENTITIES["remediator"][0]
"""The user the world's kube Lambda authenticates as."""
IN_FORCE_SECONDS = 60.0
"""The apiserver calls a new webhook within a second on an idle machine; this bounds a
broken run."""


@dataclass
class FailingWebhook:
    refusals: int
    """The remediator's writes still to fail."""
    hang: float = 0.0
    """How long each of them waits before it fails: the write holds its seat in the
    apiserver's priority and fairness meanwhile, as a write held by a slow webhook does."""
    refused: int = 0
    admitted: list[str] = field(default_factory=list)
    """The users whose writes it admitted, in order."""
    hanging: threading.Event = field(default_factory=threading.Event)
    """Set while a refused write waits; ``released`` ends every wait at once."""
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def review(self, user: str) -> bool:
        """Admit, or fail this one (the apiserver's call of the webhook errs)."""
        with self.lock:
            if user == REMEDIATOR and self.refusals > 0:
                self.refusals -= 1
                self.refused += 1
                return False
            self.admitted.append(user)
            return True


def _handler(webhook: FailingWebhook) -> type[BaseHTTPRequestHandler]:
    class Review(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            if not webhook.review(request["userInfo"]["username"]):
                if webhook.hang:
                    webhook.hanging.set()
                    webhook.released.wait(webhook.hang)
                    webhook.hanging.clear()
                self.send_response(500)
                self.end_headers()
                return
            answer = {**review, "response": {"uid": request["uid"], "allowed": True}}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Review


@contextlib.contextmanager
def failing_webhook(
    admin: client.ApiClient,
    certs: Path,
    node: str,
    refusals: int,
    *,
    every_node: bool = False,
    hang: float = 0.0,
) -> Iterator[FailingWebhook]:
    """In force on writes to ``node`` (to every Node with ``every_node``: a storm's) until
    the block ends; served with the world's serving certificate for 127.0.0.1 (``certs``),
    which the apiserver is told to trust. The apiserver waits for it ``hang`` seconds and
    five more."""
    webhook = FailingWebhook(refusals, hang)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(webhook))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs / "serving.crt", certs / "serving.key")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    name = f"refuse-{node.split('.', maxsplit=1)[0]}"
    registration = client.AdmissionregistrationV1Api(admin)
    ca = (certs / "serving.crt").read_bytes()
    registration.create_validating_webhook_configuration(
        {
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": f"{name}.nodemedic.test",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{server.server_port}/review",
                        "caBundle": base64.b64encode(ca).decode(),
                    },
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": ["nodes"],
                        }
                    ],
                    "objectSelector": (
                        {} if every_node else {"matchLabels": {"kubernetes.io/hostname": node}}
                    ),
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": min(30, 5 + math.ceil(hang)),
                }
            ],
        }
    )
    try:
        _in_force(admin, webhook, node)
        yield webhook
    finally:
        webhook.released.set()
        registration.delete_validating_webhook_configuration(name)
        server.shutdown()
        server.server_close()


def _in_force(admin: client.ApiClient, webhook: FailingWebhook, node: str) -> None:
    """Once the apiserver calls it: a dry-run write as another user, until one is admitted."""
    core = client.CoreV1Api(admin)

    deadline = time.monotonic() + IN_FORCE_SECONDS
    while not webhook.admitted:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the webhook was not called within {IN_FORCE_SECONDS:.0f}s")
        label = {"metadata": {"labels": {"probe": str(time.time_ns())}}}
        core.patch_node(node, label, dry_run="All")
        time.sleep(0.1)
