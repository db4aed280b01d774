"""The chart's ``agent.podDevices``: off by default (no Kubernetes credential, no socket, no
flag: the render of before), and on request the socket, the flags, the pod's token and the
credential's objects, nothing else (their behaviour on the API server:
tests/integration/lambdas/kube/test_pod_devices_policy.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from nodemedic.contracts.kube import POD_DEVICES_KEY
from tests.support.helm import REQUIRED, render
from tests.support.pod_devices_policy import NODE_NAME_EXTRA
from world.kube.chart import agent_container, documents, one
from world.kube.poddevices import CREDENTIAL_KINDS, ROLE

ON = {**REQUIRED, "agent.podDevices.enabled": "true"}
SOCKET_DIR = "/var/lib/kubelet/pod-resources"
"""Where the kubelet serves its PodResources API (kubelet.sock)."""
FLAGS = [
    "--pod-devices",
    "--node-name=$(NODE_NAME)",
    f"--pod-resources-socket={SOCKET_DIR}/kubelet.sock",
]


def credential_objects(rendered: str) -> list[dict[str, Any]]:
    return [d for d in documents(rendered) if d["metadata"]["name"] == ROLE]


def without_pod_devices(rendered: str) -> list[dict[str, Any]]:
    """The render with what ``agent.podDevices`` adds taken out again."""
    kept = [copy.deepcopy(d) for d in documents(rendered) if d["metadata"]["name"] != ROLE]
    (daemonset,) = [d for d in kept if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    pod.pop("automountServiceAccountToken", None)
    pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "pod-resources"]
    (container,) = pod["containers"]
    container["args"] = [a for a in container["args"] if a not in FLAGS]
    container["volumeMounts"] = [
        m for m in container["volumeMounts"] if m["name"] != "pod-resources"
    ]
    return kept


def test_off_by_default_the_agent_has_no_kubernetes_credential(helm: Path) -> None:
    default = render(helm)
    assert not credential_objects(default)
    assert (
        "automountServiceAccountToken" not in one(default, "DaemonSet")["spec"]["template"]["spec"]
    )
    assert one(default, "ServiceAccount")["automountServiceAccountToken"] is False
    assert not set(FLAGS) & set(agent_container(default)["args"])
    assert SOCKET_DIR not in json.dumps(documents(default))


def test_on_request_the_agent_reads_the_socket_and_gets_its_token_and_nothing_else(
    helm: Path,
) -> None:
    default, on = render(helm), render(helm, ON)
    assert without_pod_devices(on) == documents(default)
    pod = one(on, "DaemonSet")["spec"]["template"]["spec"]
    # The pod's own token (the account mounts none: Pod Identity and IRSA bring theirs).
    assert pod["automountServiceAccountToken"] is True
    assert one(on, "ServiceAccount")["automountServiceAccountToken"] is False
    container = agent_container(on)
    assert container["args"][-len(FLAGS) :] == FLAGS
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "pod-resources"]
    assert mount == {"name": "pod-resources", "mountPath": SOCKET_DIR, "readOnly": True}
    (volume,) = [v for v in pod["volumes"] if v["name"] == "pod-resources"]
    assert volume["hostPath"] == {"path": SOCKET_DIR, "type": "Directory"}
    (node_name,) = [e for e in container["env"] if e["name"] == "NODE_NAME"]
    assert node_name["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}


def test_the_credential_may_get_and_patch_nodes_narrowed_by_the_policy(helm: Path) -> None:
    """The rules are CEL text: a renamed annotation must fail here, not silently admit
    nothing (or everything)."""
    on = render(helm, ON, namespace="gpu-ops")  # the release's namespace names the agent
    made = {d["kind"]: d for d in credential_objects(on)}
    assert set(made) == CREDENTIAL_KINDS - {"ServiceAccount"}
    assert made["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    ]
    account = one(on, "ServiceAccount")["metadata"]
    assert made["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": "gpu-ops"}
    ]
    policy = made["ValidatingAdmissionPolicy"]["spec"]
    (match,) = policy["matchConditions"]
    user = f"system:serviceaccount:gpu-ops:{account['name']}"
    assert match["expression"] == f'request.userInfo.username == "{user}"'
    text = json.dumps(policy)
    assert POD_DEVICES_KEY in text and NODE_NAME_EXTRA in text
    assert made["ValidatingAdmissionPolicyBinding"]["spec"] == {
        "policyName": made["ValidatingAdmissionPolicy"]["metadata"]["name"],
        "validationActions": ["Deny"],
    }
