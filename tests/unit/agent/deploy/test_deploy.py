"""The agent's deployment files beside the chart (its IAM policy, the systemd unit for hosts
without Kubernetes) say what the agent needs and no more; tests/integration/deploy/chart checks the
chart's DaemonSet."""

from __future__ import annotations

import json

from tests.support.paths import ROOT

DEPLOY = ROOT / "agent" / "deploy"


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
