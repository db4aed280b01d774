"""The agent's Kubernetes credential for publishing the pod-devices record
(``agent.podDevices.enabled``: its ClusterRole and the admission policy that narrows it), on
the real kube-apiserver, and the agent as that credential authenticates it: a service-account
token bound to a pod on its node, as the kubelet mounts it into the agent's pod.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Collection, Iterator
from typing import Any, Literal
from urllib.parse import quote

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.support.helm import REQUIRED, render
from world.kube.chart import helm_binary
from world.kube.poddevices import CREDENTIAL_KINDS, credential_objects

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
"""The user extra a token bound to a pod carries with the pod's node (Kubernetes 1.32+)."""
POLICY_KINDS = frozenset({"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"})
REFUSED_BY_POLICY = "nodemedic's agent"
"""How each of the policy's messages begins."""
MERGE_PATCH = "application/merge-patch+json"
Outcome = Literal["refused", "admitted", "not refused"]


def record(*pods: str) -> dict[str, Any]:
    """A merge patch setting the pod-devices record, as the agent writes it."""
    held = {f"default/{pod}": [str(gpu)] for gpu, pod in enumerate(pods)}
    return {"metadata": {"annotations": {POD_DEVICES_KEY: json.dumps(held)}}}


def chart_objects(namespace: str, kinds: Collection[str]) -> list[dict[str, Any]]:
    """What the chart renders for the agent's credential, released into ``namespace``: its
    service account and, of ``kinds``, the role and policy objects of the pod-devices record."""
    rendered = render(
        helm_binary(), {**REQUIRED, "agent.podDevices.enabled": "true"}, namespace=namespace
    )
    return credential_objects(rendered, kinds)


@contextlib.contextmanager
def agent_credential(
    api: client.ApiClient, namespace: str, probe: str, kinds: Collection[str] = CREDENTIAL_KINDS
) -> Iterator[str]:
    """The chart's objects of ``kinds`` in force on the API server for a release in
    ``namespace``; yields the agent's user name. Removed after, policy first, each once the
    API server's caches say so (dry-run writes on the Node ``probe`` tell): the server is
    shared with other tests."""
    made = chart_objects(namespace, kinds)
    dynamic = DynamicClient(api)
    handles = [dynamic.resources.get(api_version=d["apiVersion"], kind=d["kind"]) for d in made]
    for handle, document in zip(handles, made, strict=True):
        handle.create(body=document, namespace=document["metadata"].get("namespace"))
    (account,) = [d["metadata"]["name"] for d in made if d["kind"] == "ServiceAccount"]
    user = f"system:serviceaccount:{namespace}:{account}"
    policy = set(kinds) >= POLICY_KINDS
    try:
        _until(api, user, probe, "refused" if policy else "admitted")
        yield user
    finally:
        policy_first = sorted(
            zip(handles, made, strict=True), key=lambda pair: pair[1]["kind"] not in POLICY_KINDS
        )
        for handle, document in policy_first:
            handle.delete(
                name=document["metadata"]["name"], namespace=document["metadata"].get("namespace")
            )
        if policy:
            _until(api, user, probe, "not refused")


def bound_agent(admin: client.ApiClient, user: str, node: str) -> client.CoreV1Api:
    """The API as the agent on ``node`` (``bound_token``)."""
    settings = client.Configuration(
        host=admin.configuration.host,
        api_key={"BearerToken": f"Bearer {bound_token(admin, user, node)}"},
    )
    settings.ssl_ca_cert = admin.configuration.ssl_ca_cert
    return client.CoreV1Api(client.ApiClient(settings))


def bound_token(admin: client.ApiClient, user: str, node: str) -> str:
    """The agent's token on ``node``: a Pod of the service account ``user`` names, bound
    to ``node`` (no kubelet needs to run it), and a token bound to that Pod, as the kubelet
    projects into the agent's pod (``automountServiceAccountToken``)."""
    _, _, namespace, account = user.split(":")
    core = client.CoreV1Api(admin)
    pod = core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": f"agent-{node.split('.', maxsplit=1)[0]}"},
            "spec": {
                "nodeName": node,
                "serviceAccountName": account,
                "automountServiceAccountToken": False,
                "containers": [{"name": "agent", "image": "example.invalid/nodemedic-agent"}],
            },
        },
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(
            audiences=[],  # the API server's own
            expiration_seconds=600,
            bound_object_ref=client.V1BoundObjectReference(
                api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid
            ),
        )
    )
    token = core.create_namespaced_service_account_token(account, namespace, request)
    return str(token.status.token)


def who(api: client.CoreV1Api) -> client.V1UserInfo:
    """The user the API server authenticates ``api`` as (a SelfSubjectReview)."""
    review = client.AuthenticationV1Api(api.api_client).create_self_subject_review(
        client.V1SelfSubjectReview()
    )
    info: client.V1UserInfo = review.status.user_info
    return info


def as_agent(admin: client.ApiClient, user: str, node: str | None) -> client.CoreV1Api:
    """The agent's user impersonated by cluster-admin, with ``node`` as the node-name extra;
    ``None``: without it, as a token of a Kubernetes before 1.32 authenticates."""
    api = client.ApiClient(admin.configuration)
    api.set_default_header("Impersonate-User", user)
    if node is not None:
        # A header's name has no "/": the extra's key is percent-encoded in it.
        api.set_default_header(f"Impersonate-Extra-{quote(NODE_NAME_EXTRA, safe='')}", node)
    return client.CoreV1Api(api)


def write(api: client.CoreV1Api, node: str, patch: dict[str, Any], **options: Any) -> None:
    """A JSON merge patch of ``node``, as the agent writes its record."""
    api.patch_node(node, patch, _content_type=MERGE_PATCH, **options)


def refusal(api: client.CoreV1Api, node: str, patch: dict[str, Any]) -> str:
    """The API server's message refusing ``patch`` on ``node``; AssertionError if admitted."""
    try:
        write(api, node, patch)
    except client.ApiException as exc:
        assert exc.status in (403, 422), exc
        return str(exc.body)
    raise AssertionError(f"the agent's patch on {node} was admitted: {patch}")


def _until(admin: client.ApiClient, user: str, node: str, wanted: Outcome) -> None:
    """Until a dry-run record on ``node`` by ``user``, without a node name, is ``wanted``:
    ``refused`` by the policy (in the API server's cache now), ``admitted`` (RBAC's grant in
    force, no policy) or ``not refused`` by the policy (gone from the cache)."""
    probe = as_agent(admin, user, None)
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        try:
            write(probe, node, record("probe"), dry_run="All")
        except client.ApiException as exc:
            if exc.status not in (403, 422):
                raise
            outcome = "refused" if REFUSED_BY_POLICY in str(exc.body) else "forbidden"
        else:
            outcome = "admitted"
        if outcome == wanted or (wanted == "not refused" and outcome != "refused"):
            return
        time.sleep(0.2)
    raise AssertionError(f"a record of {user} on {node} still not {wanted}")
