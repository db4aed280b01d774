"""The spare states and their permissions in the synthesized template: Standby calls only on
the groups that keep spares, and no spare state at all in a cluster that keeps none."""

from __future__ import annotations

from typing import Any

from stacks.synth import synth_template
from tests.support.remediation import ACTING, UNSET, state_machine_definition
from tests.support.templates import actions, policy_statements

SPARE_STATES = {"Group keeps spares?", "Exit standby", "Admit spare", "Enter standby"}


def _statements(template: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in policy_statements(template) if action in actions(s)]


def test_standby_calls_are_allowed_only_on_the_groups_that_keep_spares(
    default_template: dict[str, Any],
) -> None:
    for action in ("autoscaling:exitStandby", "autoscaling:enterStandby"):
        (allowed,) = _statements(default_template, action)
        assert allowed["Effect"] == "Allow"
        arns = (
            [allowed["Resource"]] if isinstance(allowed["Resource"], dict) else allowed["Resource"]
        )
        assert len(arns) == len(ACTING.spare_groups)
        for group in ACTING.spare_groups:
            assert any(f"autoScalingGroupName/{group}" in str(arn) for arn in arns)
    states = state_machine_definition(default_template)["States"]
    assert set(states) >= SPARE_STATES
    assert states["Exit standby"]["Next"] == "Admit spare"
    assert states["Admit spare"]["Next"] == "Set instance unhealthy"


def test_a_cluster_without_spares_replaces_as_before() -> None:
    template = synth_template(UNSET)
    assert _statements(template, "autoscaling:exitStandby") == []
    states = state_machine_definition(template)["States"]
    assert not SPARE_STATES & set(states)
    assert states["Start replacing"]["Next"] == "Set instance unhealthy"
