"""AWS's own rules on what ``cdk synth`` produces (moto enforces none of them): parliament on
every policy document, cfn-lint on every template, asl-validator on every state machine.

The templates: cdk.json's clusters (what ``make synth`` deploys), the infrastructure tests'
richest cluster (job monitoring, mail, two acting groups), the remediation tests' acting
cluster (spares) and one that resets GPUs (an SSM document and its grant) and asks approval
for every action (its wait on a task token). Each is synthesized once per session
(``synth_template`` caches), shared with the tests that already read it."""

from __future__ import annotations

import json

import pytest

from app import clusters_from_context
from nodemedic.settings import CONTEXT_KEY, ClusterSettings
from stacks.synth import synth_template
from tests.support.paths import ROOT
from tests.support.remediation import acting_template
from tests.support.templates import Template
from tests.support.validators import (
    AGENT_POLICY,
    IDENTITY,
    STATE_MACHINE,
    Document,
    asl_findings,
    cfn_lint_findings,
    parliament_findings,
    shipped_agent_policy,
    state_machine_definitions,
    template_policy_findings,
    unexplained,
    unread_policy_types,
    unused,
)


@pytest.fixture(scope="module")
def synthesized(template: Template) -> dict[str, Template]:
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]
    found = {
        f"cdk.json:{s.name}": synth_template(s) for s in clusters_from_context(context[CONTEXT_KEY])
    }
    # One cluster for all, each synthesis costs half a minute: with every substrate.
    careful = ClusterSettings(
        name="careful",
        gpu_reset=True,
        node_groups=("g6-train",),
        approval="any",
        hyperpod_clusters=(("ml-cluster", "abcdef123456"),),
        hyperpod_repair="when_recovery_off",
        karpenter_nodepools=("gpu",),
        reserved_capacity=("g6-train",),
    )
    return {
        **found,
        "rich": template,
        "acting": acting_template(),
        "careful": synth_template(careful),
    }


def test_parliament_finds_nothing_unexplained_in_any_policy(
    synthesized: dict[str, Template],
) -> None:
    for name, template in synthesized.items():
        assert unread_policy_types(template) == set(), f"{name}: a policy parliament never reads"
    findings = [
        *parliament_findings(shipped_agent_policy(), IDENTITY, AGENT_POLICY.name),
        *(f for template in synthesized.values() for f in template_policy_findings(template)),
    ]
    assert unexplained(findings) == []
    assert unused(findings, "parliament") == [], "an ignored finding that no longer occurs"


def test_cfn_lint_finds_nothing_unexplained_in_any_template(
    synthesized: dict[str, Template],
) -> None:
    findings = [f for template in synthesized.values() for f in cfn_lint_findings(template)]
    assert unexplained(findings) == []
    assert unused(findings, "cfn-lint") == [], "an ignored finding that no longer occurs"


def test_asl_validator_passes_every_state_machine(synthesized: dict[str, Template]) -> None:
    # One run of each distinct definition: clusters often share theirs.
    distinct: dict[str, tuple[str, Document]] = {}
    for name, template in synthesized.items():
        for logical_id, definition in state_machine_definitions(template).items():
            text = json.dumps(definition, sort_keys=True)
            distinct.setdefault(text, (f"{name}:{logical_id}", definition))
    assert len(distinct) >= 4
    assert unexplained(asl_findings(dict(distinct.values()))) == []


def test_asl_validator_fails_invalid_states() -> None:
    definitions = {
        "choice without choices": {
            "StartAt": "Act?",
            "States": {"Act?": {"Type": "Choice", "Default": "Done"}, "Done": {"Type": "Succeed"}},
        },
        "next to a missing state": {
            "StartAt": "Wait",
            "States": {"Wait": {"Type": "Wait", "Seconds": 1, "Next": "Nowhere"}},
        },
        "valid": {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}},
    }
    found = asl_findings(definitions)
    assert {f.where for f in found} == {"choice without choices", "next to a missing state"}
    checks = {(f.where, f.check) for f in found}
    assert ("choice without choices", "SCHEMA_VALIDATION_FAILED") in checks
    assert ("next to a missing state", "MISSING_TRANSITION_TARGET") in checks
    assert all(f.kind == STATE_MACHINE for f in found)
    assert len(unexplained(found)) == len(found)
