"""The scale benchmark at a small size: a KWOK world whose nodes run no agent process still
proves every fault's origin, cordons and repairs each failing node, and its figures come out
whole, so ``bench.scale`` never breaks unseen between full runs. Meanwhile the API server
refuses the remediator (its load shed to one request at a time, its first writes to Nodes
failed by a webhook), and Step Functions' ``StartExecution`` bucket holds one start and
refills one every 5 s: the starts it throttles are counted where they happen and ridden
over (the classifier's tries within its invocation, then Lambda's run of the batch again).
After the storm no node is left cordoned without a remediation, and the dashboard's outcomes
are the ledger's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale import run_case
from bench.scalereport import whole

pytestmark = [pytest.mark.kube, pytest.mark.slow, pytest.mark.controllers]


def test_signed_distinct_faults_on_a_kwok_world_are_cordoned_and_repaired_through_refusals(
    tmp_path: Path,
) -> None:
    figures = run_case(
        30, 3, raised=True, spread=1.0, workdir=tmp_path, refuse=4, starts=(1.0, 0.2)
    )
    assert figures["errors"] == 0, (figures["failures"], figures["dead_letter_errors"])
    # KWOK made the 30 Nodes Ready; every failing node got one execution, all ended well.
    assert figures["kwok_ready_s"] is not None
    assert figures["statuses"] == {"SUCCEEDED": 3}, figures
    assert figures["executions_failed"] == 0
    # Proof of origin is enforced: a cordon means the signed line was proven.
    cordon = figures["cordon"]
    assert cordon["n"] == 3, figures
    assert 0 < cordon["p50"] <= cordon["p90"] <= cordon["max"]
    # With the breaker's limits raised, each one is drained and repaired, in that order.
    assert figures["drained"]["n"] == 3 and figures["repaired"]["n"] == 3, figures
    assert figures["drained"]["max"] <= figures["repaired"]["max"]
    assert figures["breaker_state"] == "closed"
    assert figures["lambda_per_node"] > 0 and figures["stepfunctions_calls_per_node"] > 0
    # The webhook failed the remediator's first four writes; each was counted and retried.
    assert figures["refused_writes"] == 4
    assert figures["kube_refused"].get("500") == 4, figures["kube_refused"]
    # Step Functions throttled the second and third starts at least once; the classifier
    # counted each throttle it met, and none of the starts was lost.
    assert figures["starts_throttled"] >= 2, figures
    counted = figures["aws_throttled"]
    assert set(counted) == {"states.StartExecution"}, counted
    assert 2 <= counted["states.StartExecution"] <= figures["starts_throttled"], figures
    # After the storm: nothing stranded, and the dashboard tells what the ledger holds.
    assert figures["reconciled"] and figures["stranded"] == 0, figures["stranded_nodes"]
    outcomes = figures["ledger_outcomes"]
    assert sum(outcomes.values()) == 3 and set(outcomes) <= {"replaced", "rebooted"}, outcomes
    assert figures["dashboard_outcomes"] == figures["ledger_outcomes"]
    assert whole(figures)
