"""The local world's agents publish their Node's device record as a real node's agent does
(``agent.poddevices``): from the simulated kubelet's PodResources socket, with the
credential the chart's ``agent.podDevices.enabled`` gives (the agent's service account, its
ClusterRole and the admission policy that keeps it to its own Node's one annotation),
applied to the world's API server as the chart renders it.

One difference from a node, said here: on EKS the agent's token is bound to its pod, which
the kubelet runs; no container runs here, so the world binds each agent's token to its
Node instead (a TokenRequest bound to a Node, GA since Kubernetes 1.33). Both kinds carry
the node's name in the token's user extra, which is what the policy reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from world.kube.chart import NAMESPACE, documents, helm_binary, render

ROLE = "nodemedic-agent-pod-devices"
"""The name of the chart's ClusterRole, binding and policy objects for the record."""
CREDENTIAL_KINDS = frozenset(
    {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)
TOKEN_SECONDS = 24 * 3600
"""A world lives minutes; its agents' tokens outlive it."""


def credential_objects(
    rendered: str, kinds: Iterable[str] = CREDENTIAL_KINDS
) -> list[dict[str, Any]]:
    """Of a chart rendered with ``agent.podDevices.enabled``, the documents of ``kinds``
    that make the agent's credential: its service account and the record's role and policy
    objects."""
    wanted = set(kinds)
    return [
        d
        for d in documents(rendered)
        if d["kind"] in wanted and (d["kind"] == "ServiceAccount" or d["metadata"]["name"] == ROLE)
    ]


def install(api: client.ApiClient, values: Mapping[str, str]) -> str:
    """The agent's credential in force for a release in the chart's namespace, rendered with
    the world's ``values``; the service account's name."""
    rendered = render(helm_binary(), {**values, "agent.podDevices.enabled": "true"})
    core = client.CoreV1Api(api)
    if NAMESPACE not in {n.metadata.name for n in core.list_namespace().items}:
        core.create_namespace({"metadata": {"name": NAMESPACE}})
    dynamic = DynamicClient(api)
    made = credential_objects(rendered)
    for document in made:
        handle = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        handle.create(body=document, namespace=document["metadata"].get("namespace"))
    (account,) = [d["metadata"]["name"] for d in made if d["kind"] == "ServiceAccount"]
    return str(account)


def write_credentials(api: client.ApiClient, account: str, node: str, folder: Path) -> None:
    """What Kubernetes mounts into the agent's pod on ``node``: ``token`` (the service
    account's, bound to the Node) and the API server's ``ca.crt``."""
    core = client.CoreV1Api(api)
    found = core.read_node(node)
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(
            audiences=[],  # the API server's own
            expiration_seconds=TOKEN_SECONDS,
            bound_object_ref=client.V1BoundObjectReference(
                api_version="v1", kind="Node", name=node, uid=found.metadata.uid
            ),
        )
    )
    token = core.create_namespaced_service_account_token(account, NAMESPACE, request)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token.status.token)
    (folder / "ca.crt").write_bytes(Path(api.configuration.ssl_ca_cert).read_bytes())
