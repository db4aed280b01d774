"""The instance id and region, from the EC2 instance metadata service (IMDSv2).

The instance id names the log streams, and the pipeline takes a node's identity from the
stream name only, so it must come from EC2 itself, not from a hostname.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request

from nodemedic.contracts.env import ENV_IMDS_ENDPOINT

ENDPOINT = "http://169.254.169.254"


class IdentityError(RuntimeError):
    pass


def _request(url: str, method: str, headers: dict[str, str], timeout: float) -> str:
    request = urllib.request.Request(url, method=method, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        body: bytes = response.read()
    return body.decode("ascii").strip()


def _endpoint(endpoint: str | None) -> str:
    return (endpoint or os.environ.get(ENV_IMDS_ENDPOINT) or ENDPOINT).rstrip("/")


def _session(endpoint: str, timeout: float) -> dict[str, str]:
    """The headers of an IMDSv2 session (a token PUT first: IMDSv1 may be off)."""
    token = _request(
        f"{endpoint}/latest/api/token",
        "PUT",
        {"X-aws-ec2-metadata-token-ttl-seconds": "300"},
        timeout,
    )
    return {"X-aws-ec2-metadata-token": token}


def _metadata(endpoint: str, paths: tuple[str, ...], timeout: float) -> list[str]:
    """The values under ``latest/meta-data/`` of ``paths``, in one IMDSv2 session."""
    headers = _session(endpoint, timeout)
    return [
        _request(f"{endpoint}/latest/meta-data/{path}", "GET", headers, timeout) for path in paths
    ]


def instance_identity(endpoint: str | None = None, timeout: float = 2.0) -> tuple[str, str]:
    """(instance id, region); raises IdentityError off EC2 or when the metadata service is
    unreachable (in a pod: hostNetwork, or a hop limit of 2)."""
    endpoint = _endpoint(endpoint)
    try:
        instance_id, region = _metadata(endpoint, ("instance-id", "placement/region"), timeout)
    except (urllib.error.URLError, OSError) as exc:
        raise IdentityError(
            f"cannot read the instance identity from IMDSv2 at {endpoint} ({exc}); "
            "off EC2, pass --instance-id and --region"
        ) from exc
    return instance_id, region


def identity_document(endpoint: str | None = None, timeout: float = 2.0) -> tuple[str, str]:
    """(instance identity document, AWS's base64 RSA signature over it), as IMDSv2 serves
    them to this instance only; raises IdentityError where there is no IMDS."""
    endpoint = _endpoint(endpoint)
    try:
        headers = _session(endpoint, timeout)
        base = f"{endpoint}/latest/dynamic/instance-identity"
        document = _request(f"{base}/document", "GET", headers, timeout)
        signature = _request(f"{base}/signature", "GET", headers, timeout)
    except (urllib.error.URLError, OSError) as exc:
        raise IdentityError(
            f"cannot read the instance identity document at {endpoint} ({exc})"
        ) from exc
    return document, signature


def instance_type(endpoint: str | None = None, timeout: float = 2.0) -> str:
    """The instance type (``p5.48xlarge``); empty when the metadata service cannot say,
    which leaves the device counts unchecked rather than stops the agent."""
    try:
        return _metadata(_endpoint(endpoint), ("instance-type",), timeout)[0]
    except (urllib.error.URLError, OSError):
        return ""
