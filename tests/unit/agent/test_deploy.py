"""The deployment files say what the agent needs and no more."""

from __future__ import annotations

import json
from typing import Any

import yaml

from agent.cli import DEFAULT_METRICS_PORT
from agent.metrics import LIVENESS_PATH
from tests.support.paths import ROOT

DEPLOY = ROOT / "agent" / "deploy"


def documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((DEPLOY / "daemonset.yaml").read_text()))


def daemonset() -> dict[str, Any]:
    (found,) = [d for d in documents() if d["kind"] == "DaemonSet"]
    return found


def test_everything_lives_in_the_nodemedic_namespace_under_its_own_service_account() -> None:
    kinds = {d["kind"]: d["metadata"] for d in documents()}
    assert set(kinds) == {"Namespace", "ServiceAccount", "DaemonSet"}
    assert kinds["Namespace"]["name"] == "nodemedic"
    assert kinds["ServiceAccount"] == {
        **kinds["ServiceAccount"],
        "name": "nodemedic-agent",
        "namespace": "nodemedic",
    }
    assert kinds["DaemonSet"]["namespace"] == "nodemedic"


def test_runs_on_accelerator_nodes_only_and_stays_on_cordoned_ones() -> None:
    pod = daemonset()["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {e["key"] for term in terms["nodeSelectorTerms"] for e in term["matchExpressions"]}
    assert {
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-accelerator-count",  # Neuron (Trainium, Inferentia)
        "nvidia.com/gpu.present",
    } <= keys
    assert {"operator": "Exists"} in pod["tolerations"]
    assert pod["priorityClassName"] == "system-node-critical"


def test_daemonset_mounts_kmsg_and_sys_read_only_and_keeps_state_on_the_host() -> None:
    pod = daemonset()["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    assert volumes["kmsg"] == {"path": "/dev/kmsg", "type": "CharDevice"}
    assert mounts["kmsg"]["readOnly"] and mounts["sys"]["readOnly"]
    assert volumes["state"]["path"] == "/var/lib/nodemedic"
    args = container["args"]
    assert args[0] == "agent" and "--state-dir=/var/lib/nodemedic" in args
    assert f"--sys-root={mounts['sys']['mountPath']}" in args
    assert container["livenessProbe"]["httpGet"]["port"] == DEFAULT_METRICS_PORT
    # The probe asks whether the agent's loops turn (agent.liveness), not just whether the
    # metrics endpoint answers.
    assert container["livenessProbe"]["httpGet"]["path"] == LIVENESS_PATH
    assert pod["serviceAccountName"] == "nodemedic-agent" and pod["hostNetwork"]
    assert {"operator": "Exists"} in pod["tolerations"]
    assert "nvidia.com/gpu" not in json.dumps(container["resources"]), "must not take a GPU"
    assert "neuron" not in json.dumps(container["resources"]), "nor a Neuron device"
    assert not pod.get("hostPID") and not pod.get("hostIPC")
    assert container["securityContext"]["readOnlyRootFilesystem"]
    assert set(mounts) == set(volumes) == {"kmsg", "sys", "state"}, "no other host path"


def test_iam_policy_allows_shipping_to_the_cluster_log_group_only() -> None:
    policy = json.loads((DEPLOY / "iam-policy.json").read_text())
    statement, seal = policy["Statement"]
    assert statement["Effect"] == "Allow"
    assert sorted(statement["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert all(":log-group:/nodemedic/CLUSTER_NAME/nodes" in r for r in statement["Resource"])
    # And sealing its registration under the cluster's origin key, for that cluster only.
    assert (seal["Effect"], seal["Action"]) == ("Allow", ["kms:Encrypt"])
    # On the key the agent names by its alias: an alias ARN in Resource would name the
    # alias, not the key (docs/security.md, "Proof of origin").
    assert seal["Resource"] == "arn:aws:kms:REGION:ACCOUNT_ID:key/*"
    assert seal["Condition"] == {
        "StringEquals": {
            "kms:RequestAlias": "alias/nodemedic-CLUSTER_NAME-origin",
            "kms:EncryptionContext:nodemedic:cluster": "CLUSTER_NAME",
        }
    }


def test_systemd_unit_runs_the_agent_with_its_state_dir() -> None:
    unit = (DEPLOY / "nodemedic-agent.service").read_text()
    assert "ExecStart=/usr/local/bin/nodemedic agent --state-dir=/var/lib/nodemedic" in unit
    assert "KillSignal=SIGTERM" in unit and "Restart=always" in unit
    assert "CapabilityBoundingSet=CAP_SYSLOG" in unit
