"""The EKS bearer token and client, without a network: botocore presigns offline and moto
answers eks:DescribeCluster."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from moto import mock_aws

from lambdas.kube import client as kube_client
from lambdas.kube import eks_auth
from lambdas.kube.eks_auth import TokenSource, presigned_token

REGION = "eu-west-1"


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Static keys: presigning is local computation, no call leaves the process."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


@pytest.fixture
def aws(credentials: None) -> Iterator[None]:
    with mock_aws():
        yield


def presigned_url(token: str) -> str:
    assert token.startswith("k8s-aws-v1.")
    body = token.removeprefix("k8s-aws-v1.")
    assert "=" not in body
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def test_token_is_a_presigned_get_caller_identity_naming_the_cluster(credentials: None) -> None:
    url = urlsplit(presigned_url(presigned_token(boto3.Session().client("sts"), "training-east")))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}

    assert (url.scheme, url.netloc) == ("https", f"sts.{REGION}.amazonaws.com")
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-Credential"].startswith("AKIAIOSFODNN7EXAMPLE/")
    assert query["X-Amz-Credential"].endswith(f"/{REGION}/sts/aws4_request")
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]


def test_the_cluster_header_is_signed_only_for_the_token(credentials: None) -> None:
    sts = boto3.Session().client("sts")
    presigned_token(sts, "a")

    plain = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60)

    assert "x-k8s-aws-id" not in plain
    assert presigned_token(sts, "a") != presigned_token(sts, "b")


def test_token_is_kept_until_a_minute_before_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def fake(sts: object, cluster: str) -> str:
        made.append(cluster)
        return f"t{len(made)}"

    monkeypatch.setattr(eks_auth, "presigned_token", fake)
    now = [1000.0]
    tokens = TokenSource(object(), "demo", clock=lambda: now[0])

    first = tokens.token()
    now[0] += 12 * 60
    kept = tokens.token()
    now[0] += 60
    renewed = tokens.token()

    assert (first, kept, renewed) == ("t1", "t1", "t2")


def test_eks_client_talks_to_the_described_cluster(aws: None) -> None:
    eks = boto3.Session().client("eks")
    eks.create_cluster(
        name="training-east",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    described = eks.describe_cluster(name="training-east")["cluster"]
    kube_client.eks_client.cache_clear()

    api = kube_client.eks_client("training-east")

    configuration = api.configuration
    assert configuration.host == described["endpoint"]
    ca = Path(configuration.ssl_ca_cert).read_bytes()
    assert ca == base64.b64decode(described["certificateAuthority"]["data"])
    header = configuration.auth_settings()["BearerToken"]
    assert header["key"] == "authorization"
    assert header["value"].startswith("Bearer k8s-aws-v1.")
    assert "x-k8s-aws-id" in presigned_url(header["value"].removeprefix("Bearer "))


def test_without_kubeconfig_or_cluster_the_client_says_what_to_set(aws: None) -> None:
    with pytest.raises(kube_client.ClientConfigError, match="KUBECONFIG"):
        kube_client.api_client(kube_client.ClusterAccess.from_environ(os.environ))
