"""Karpenter and EKS Auto Mode (``karpenter_nodepools``) in the synthesized state machine:
an instance in no Auto Scaling group is looked up as a NodeClaim of a listed NodePool, and a
replacement deletes the NodeClaim and waits, bounded, for it and its Node to go. The live
flow needs the kube Lambda's NodeClaim operations and a Karpenter controller; these tests
read the definition and the role's guardrails."""

from __future__ import annotations

from typing import Any

import pytest

from nodemedic.contracts.substrates import DELETE_NODECLAIM_OP, NODECLAIM_GONE_OP, NODECLAIM_OF_OP
from nodemedic.settings import ClusterSettings
from stacks.synth import synth_template
from tests.support.remediation import FAST, state_machine_definition

KARPENTER = ClusterSettings(name="pools", karpenter_nodepools=("gpu", "train"), **FAST)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_template(KARPENTER)


@pytest.fixture(scope="module")
def states(template: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = state_machine_definition(template)["States"]
    return found


def _targets(choice: dict[str, Any]) -> list[str]:
    return [rule["Next"] for rule in choice["Choices"]] + [choice["Default"]]


def test_an_instance_in_no_group_is_looked_up_as_a_nodeclaim(states: dict[str, Any]) -> None:
    assert states["In a node group?"]["Default"] == "Locate node for NodeClaim"
    assert states["Find NodeClaim"]["Parameters"] == {
        "op": NODECLAIM_OF_OP,
        "node.$": "$.node.node",
    }
    listed = states["NodeClaim of a listed NodePool?"]
    assert _targets(listed) == ["Auto Mode node", "Karpenter node", "Read last reboot"]
    pools = str(listed["Choices"][1])
    assert "'gpu'" in pools and "'train'" in pools
    assert states["Karpenter node"]["Parameters"]["substrate"] == "karpenter"
    assert states["Auto Mode node"]["Parameters"]["substrate"] == "automode"
    assert states["In NodePool"]["Parameters"]["name.$"] == "$.nodeclaim.nodepool"
    assert states["Plan"]["Parameters"]["target.$"] == "$.target"


def test_a_replacement_deletes_the_nodeclaim_and_waits_bounded(states: dict[str, Any]) -> None:
    where = states["Replace where?"]
    assert where["Choices"][0]["Next"] == "Delete NodeClaim"
    assert "karpenter" in str(where["Choices"][0]) and "automode" in str(where["Choices"][0])
    assert states["Delete NodeClaim"]["Parameters"]["op"] == DELETE_NODECLAIM_OP
    assert _targets(states["NodeClaim deleted?"]) == ["NodeClaim deleted at", "NodeClaim moved on"]
    assert states["NodeClaim moved on"]["Next"] == "Record failure"
    assert states["NodeClaim gone?"]["Parameters"]["op"] == NODECLAIM_GONE_OP
    gone = states["Gone with its Node?"]
    assert _targets(gone) == ["Replaced", "NodeClaim not gone", "Count NodeClaim watch"]
    rounds = KARPENTER.reboot_timeout // KARPENTER.poll_seconds
    assert gone["Choices"][1]["NumericGreaterThanEquals"] == rounds
    assert states["NodeClaim not gone"]["Next"] == "Record failure"


def test_ec2_reboots_only_this_cluster_s_listed_nodepools(template: dict[str, Any]) -> None:
    statements = {
        s.get("Sid"): s
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    }
    reboot = statements["RebootOnlyConfiguredNodeGroups"]
    assert reboot["Condition"] == {
        "StringNotEquals": {"aws:ResourceTag/karpenter.sh/nodepool": ["gpu", "train"]}
    }
    own = statements["RebootKarpenterNodesOfThisClusterOnly"]
    assert own["Effect"] == "Deny"
    assert own["Condition"]["StringNotEquals"] == {"aws:ResourceTag/eks:eks-cluster-name": "pools"}
