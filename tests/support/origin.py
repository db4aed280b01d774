"""Proof of origin in the flow tests: a test authority made for this run, which the clusters
under test trust in place of AWS's (their ``identity_certificates``), and each instance's
key registered with the identity document it signs, as the node's agent does at start
(``agent.origin``), so that the lines the tests ship are signed like an agent's.

The authority's key pair is made here at import, never AWS's; its certificate lives in a
temporary directory for as long as the test process does."""

from __future__ import annotations

import atexit
import contextlib
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.origin import sealed_registration
from nodemedic.contracts.logs import (
    identity_stream,
    kmsg_stream,
    node_log_group,
    registration_message,
)
from nodemedic.origin.signing import KEY_BYTES, Registration
from world.aws.identity import identity_document, local_authority
from world.aws.origins import kms_encrypt

AUTHORITY = local_authority()
_HOME = Path(tempfile.mkdtemp(prefix="nodemedic-authority-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
CERTIFICATE = str(AUTHORITY.write_certificate(_HOME / "authority.pem"))
"""The PEM file the clusters under test verify identity documents with."""


def register(
    logs: Any, kms: Any, cluster: str, instance_id: str, boot_id: str, *, line: bool = True
) -> bytes:
    """A new key for ``instance_id``'s boot, registered with the identity document the
    authority signed for it as the agent registers it: in its identity stream, and first in
    its kmsg stream (``line``; False: as an agent of the release before, which ships no
    registration line); the key."""
    key = secrets.token_bytes(KEY_BYTES)
    document = identity_document(instance_id, kms.meta.region_name)
    registration = Registration(instance_id, boot_id, key, document, AUTHORITY.sign(document))
    sealed = sealed_registration(kms_encrypt(kms), cluster, registration)
    at = put(logs, cluster, identity_stream(instance_id), sealed)
    if line:
        put(logs, cluster, kmsg_stream(instance_id), registration_message(sealed), at)
    return key


def put(logs: Any, cluster: str, stream: str, message: str, timestamp_ms: int = 0) -> int:
    """``message`` appended to ``stream`` of the cluster's node log group as it is (the
    stream made if missing); its timestamp, now unless given."""
    group = node_log_group(cluster)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
    timestamp_ms = timestamp_ms or int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=group,
        logStreamName=stream,
        logEvents=[{"timestamp": timestamp_ms, "message": message}],
    )
    return timestamp_ms
