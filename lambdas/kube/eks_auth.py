"""Bearer tokens for the EKS API, made as ``aws eks get-token`` makes them.

A token is a presigned ``sts:GetCallerIdentity`` URL whose signature covers the
``x-k8s-aws-id`` header naming the cluster; EKS calls the URL to learn who we are. It
needs no IAM permission and no network to make.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - the scheme tag EKS expects, no secret
CLUSTER_HEADER = "x-k8s-aws-id"
URL_EXPIRY = 60
TOKEN_LIFETIME = 14 * 60
"""EKS accepts a token for 15 minutes after it was signed; aws-cli reports 14."""
REFRESH_MARGIN = 60


def presigned_token(sts: Any, cluster: str) -> str:
    """``k8s-aws-v1.`` + unpadded base64url of the presigned URL, for ``cluster``."""

    def name_cluster(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_HEADER] = cluster

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, name_cluster)
    try:
        url: str = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=URL_EXPIRY, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister(event, name_cluster)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


class TokenSource:
    """One cluster's token, kept across warm invocations and remade before it expires."""

    def __init__(
        self, sts: Any, cluster: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._sts = sts
        self._cluster = cluster
        self._clock = clock
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        now = self._clock()
        if now >= self._expires - REFRESH_MARGIN:
            self._token = presigned_token(self._sts, self._cluster)
            self._expires = now + TOKEN_LIFETIME
        return self._token
