"""Karpenter's NodeRepair gate read as Karpenter reads it: ``--feature-gates`` over
``FEATURE_GATES`` over its default (off)."""

from __future__ import annotations

import pytest

from lambdas.kube.karpenter_repair import gate_on


@pytest.mark.parametrize(
    ("args", "env", "on"),
    [
        ([], None, False),  # Karpenter's default
        ([], "NodeRepair=true", True),  # its Helm chart's settings.featureGates.nodeRepair
        ([], "SpotToSpotConsolidation=true, NodeRepair=True", True),
        ([], "NodeRepair=false", False),
        ([], "NodeRepair=true,NodeRepair=false", False),  # the last setting wins
        (["--feature-gates=NodeRepair=true"], None, True),
        (["--feature-gates", "NodeRepair=1"], None, True),
        (["-feature-gates=NodeRepair=t"], None, True),  # Go's flags take one dash too
        (["--feature-gates=NodeRepair=false"], "NodeRepair=true", False),  # the flag wins
        (["--feature-gates=ReservedCapacity=true"], "NodeRepair=true", False),
        (["--log-level=debug"], "NodeRepair=true", True),
        ([], "NodeRepairs=true", False),
    ],
)
def test_the_gate_is_read_as_karpenter_reads_it(args: list[str], env: str | None, on: bool) -> None:
    assert gate_on(args, env) is on
