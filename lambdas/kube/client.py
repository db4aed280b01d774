"""The ApiClient for the cluster: a kubeconfig file in the local mode and tests, EKS in AWS.

Clients are cached per kubeconfig path or cluster name, so a warm Lambda reuses its
connection pool and its EKS token. Which cluster is part of the environment of every
function that talks to it (``ClusterAccess``, in the kube and jobs functions' models).
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import boto3
from kubernetes import client, config

from lambdas.environment import EnvError
from lambdas.kube.eks_auth import TokenSource
from nodemedic.contracts.env import ENV_EKS_CLUSTER, ENV_KUBECONFIG


class ClientConfigError(EnvError):
    """Neither KUBECONFIG nor EKS_CLUSTER_NAME says which cluster to talk to."""


@dataclass(frozen=True)
class ClusterAccess:
    """A kubeconfig file (the local world and the tests set it) wins over an EKS cluster."""

    kubeconfig: str
    eks_cluster: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ClusterAccess:
        found = cls(environ.get(ENV_KUBECONFIG, ""), environ.get(ENV_EKS_CLUSTER, ""))
        if not (found.kubeconfig or found.eks_cluster):
            raise ClientConfigError("set KUBECONFIG (local mode) or EKS_CLUSTER_NAME (EKS)")
        return found


def api_client(access: ClusterAccess) -> client.ApiClient:
    if access.kubeconfig:
        return _from_kubeconfig(access.kubeconfig)
    return eks_client(access.eks_cluster)


@cache
def _from_kubeconfig(path: str) -> client.ApiClient:
    return config.new_client_from_config(config_file=path)


@cache
def eks_client(cluster: str) -> client.ApiClient:
    """Endpoint and CA from ``eks:DescribeCluster``; the token is remade as it nears expiry
    by the client's refresh hook, which runs before every request."""
    session = boto3.session.Session()
    found = session.client("eks").describe_cluster(name=cluster)["cluster"]
    tokens = TokenSource(session.client("sts"), cluster)

    def refresh(configuration: client.Configuration) -> None:
        configuration.api_key["BearerToken"] = tokens.token()

    configuration = client.Configuration(host=found["endpoint"])
    configuration.ssl_ca_cert = str(_ca_file(cluster, found["certificateAuthority"]["data"]))
    configuration.api_key_prefix["BearerToken"] = "Bearer"
    # The client sends a token only if one is present before it calls the hook.
    refresh(configuration)
    configuration.refresh_api_key_hook = refresh
    return client.ApiClient(configuration)


def _ca_file(cluster: str, data: str) -> Path:
    """urllib3 reads the CA from a file; /tmp is the only place a Lambda may write."""
    path = Path(tempfile.gettempdir()) / f"nodemedic-{cluster}-ca.crt"
    path.write_bytes(base64.b64decode(data))
    return path
