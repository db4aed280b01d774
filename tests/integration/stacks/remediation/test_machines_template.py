"""The state machines beside the remediation that ``cdk synth`` produces
(``stacks.remediation.machines``), read as definitions (no execution)."""

from __future__ import annotations

from typing import Any

from nodemedic.remediate import parking
from tests.support.remediation import FAST, lambda_target, state_machine_definition


def _kube_ops(definition: dict[str, Any], template: dict[str, Any]) -> set[str]:
    """The kube ops the definition's tasks ask for, those inside a Map included."""
    found = set()
    for state in definition["States"].values():
        if state["Type"] == "Map":
            found |= _kube_ops(state["ItemProcessor"], template)
        elif (
            state["Type"] == "Task"
            and state["Resource"].startswith("${")
            and lambda_target(state, template) == "lambdas.kube.handler.handler"
        ):
            found.add(state["Parameters"]["op"])
    return found


def test_the_cleanup_is_the_failure_phase_and_the_reconcile_renews_parked_leases(
    default_template: dict[str, Any],
) -> None:
    cleanup = state_machine_definition(default_template, "RemediationAftercareCleanup")
    reconcile = state_machine_definition(default_template, "RemediationAftercareReconcile")
    assert _kube_ops(cleanup, default_template) == {"fail"}
    assert _kube_ops(reconcile, default_template) == {
        "tainted",
        "silent",
        "overdue_deep_checks",
        "census",
    }
    failure_phase = {"Record failure", "Mark failure", "Park node", "Notify failure"}
    assert failure_phase <= set(cleanup["States"])
    assert cleanup["States"]["Cleaned up"]["Type"] == "Succeed"
    assert "Remediation failed" not in cleanup["States"], "a cleanup that did its work succeeds"
    checks = reconcile["States"]["Check each node"]["ItemProcessor"]["States"]
    lock, breaker, cluster = (
        i["Update"] for i in checks["Renew lease"]["Parameters"]["TransactItems"]
    )
    assert cluster["UpdateExpression"] == parking.COUNT.text
    assert (lock["ConditionExpression"], lock["UpdateExpression"]) == (
        parking.PARKED.text,
        parking.RENEW.text,
    )
    assert breaker["UpdateExpression"] == parking.COUNT.text


def test_the_reconcile_counts_nodes_by_status_last_and_survives_its_failure(
    default_template: dict[str, Any],
) -> None:
    reconcile = state_machine_definition(default_template, "RemediationAftercareReconcile")
    census = reconcile["States"]["Count nodes by status"]
    assert census["Parameters"] == {"op": "census", "cluster": "demo"}
    assert census["Next"] == "Reconciled"
    # Whatever the census's error, the run still succeeds with the stranded nodes.
    assert census["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": None, "Next": "Reconciled"}
    ]
    assert census["ResultPath"] is None
    told = reconcile["States"]["Notify silent nodes"]
    assert told["Next"] == "List overdue deep checks"
    assert reconcile["States"]["Newly silent?"]["Default"] == "List overdue deep checks"
    # Then the nodes waiting past deep_check_timeout, told once, before the census.
    overdue = reconcile["States"]["List overdue deep checks"]
    assert overdue["Parameters"] == {
        "op": "overdue_deep_checks",
        "timeout_seconds": FAST["deep_check_timeout"],
    }
    assert reconcile["States"]["Notify overdue nodes"]["Next"] == "Count nodes by status"
    assert reconcile["States"]["Newly overdue?"]["Default"] == "Count nodes by status"
