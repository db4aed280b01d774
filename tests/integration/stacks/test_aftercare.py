"""The aftercare in the synthesized stack: what starts the cleanup, the reconcile and the
label requests, what they may do, and the alarm that says a node was left out of service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from nodemedic.remediate import parking
from stacks.remediation.machines.requests import REQUESTS_SECONDS
from tests.support.templates import (
    MACHINE,
    REMEDIATION,
    Template,
    actions,
    one,
    render,
    resources,
    statements,
)

CLEANUP = "RemediationAftercareCleanup"
RECONCILE = "RemediationAftercareReconcile"
REQUESTS = "RemediationAftercareRequests"


def _target(rule: dict[str, Any]) -> dict[str, Any]:
    (target,) = rule["Properties"]["Targets"]
    return dict(target)


def _may_only_start(template: Template, target: dict[str, Any], machine_id: str) -> None:
    granted = list(statements(template, target["RoleArn"]["Fn::GetAtt"][0]))
    assert granted == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": machine_id}}
    ]


def test_a_remediation_that_ends_uncleanly_starts_the_cleanup(template: Template) -> None:
    remediation, _ = one(template, MACHINE, REMEDIATION)
    cleanup, _ = one(template, MACHINE, CLEANUP)
    _, rule = one(template, "AWS::Events::Rule", "RemediationAftercareStopped")
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.states"],
        "detail-type": ["Step Functions Execution Status Change"],
        "detail": {
            "status": ["FAILED", "TIMED_OUT", "ABORTED"],
            "stateMachineArn": [{"Ref": remediation}],
        },
    }
    target = _target(rule)
    # The whole event is the cleanup's input: its detail carries the execution's input.
    assert "Input" not in target and "InputPath" not in target
    assert target["Arn"] == {"Ref": cleanup}
    _may_only_start(template, target, cleanup)


def test_the_reconcile_runs_on_a_schedule(template: Template) -> None:
    reconcile, _ = one(template, MACHINE, RECONCILE)
    _, rule = one(template, "AWS::Events::Rule", "RemediationAftercareSchedule")
    assert rule["Properties"]["ScheduleExpression"] == (
        f"rate({parking.RECONCILE_SECONDS // 60} minutes)"
    )
    assert rule["Properties"]["State"] == "ENABLED"
    target = _target(rule)
    assert target["Arn"] == {"Ref": reconcile}
    _may_only_start(template, target, reconcile)


def test_the_aftercare_runs_as_the_remediation_logged_and_traced(template: Template) -> None:
    """On the remediation's role: the same grants and guardrails (test_pipeline.py)."""
    _, remediation = one(template, MACHINE, REMEDIATION)
    for prefix in (CLEANUP, RECONCILE):
        _, machine = one(template, MACHINE, prefix)
        props = machine["Properties"]
        assert props["RoleArn"] == remediation["Properties"]["RoleArn"]
        assert props["TracingConfiguration"] == {"Enabled": True}
        assert props["LoggingConfiguration"]["Level"] == "ALL"
        assert props["DefinitionString"] != remediation["Properties"]["DefinitionString"]
    # The remediation, its cleanup, reconcile and requests, and the planned repairs' wait.
    assert len(resources(template, MACHINE)) == 5


def test_the_health_label_is_read_every_minute_by_a_role_that_only_starts_remediations(
    template: Template,
) -> None:
    remediation, machine = one(template, MACHINE, REMEDIATION)
    requests, props = one(template, MACHINE, REQUESTS)
    _, rule = one(template, "AWS::Events::Rule", "RemediationAftercareRequested")
    assert REQUESTS_SECONDS == 60
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Properties"]["State"] == "ENABLED"
    target = _target(rule)
    assert target["Arn"] == {"Ref": requests}
    _may_only_start(template, target, requests)
    # Its own role: the remediation's cannot name its own state machine.
    role = props["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    assert role != machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    granted = [s for s in statements(template, role) if s["Effect"] == "Allow"]
    starts = [s for s in granted if "states:StartExecution" in actions(s)]
    assert starts == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": remediation}}
    ]
    allowed = {a for s in granted for a in actions(s)}
    # It reads the labels and the locks; it reboots, replaces, writes and publishes nothing.
    assert {"lambda:InvokeFunction", "dynamodb:GetItem"} <= allowed
    assert not {
        a
        for a in allowed
        if a.split(":")[0] in ("ec2", "autoscaling", "sns")
        or a.startswith(("dynamodb:Put", "dynamodb:Update", "dynamodb:Delete"))
    }
    assert props["Properties"]["TracingConfiguration"] == {"Enabled": True}
    assert props["Properties"]["LoggingConfiguration"]["Level"] == "ALL"
    # The decision goes in as the CLI sends it, named by its id: a request seen at the
    # next tick starts nothing twice.
    definition = json.loads(render(props["Properties"]["DefinitionString"]))
    start = dict(_states(definition))["Start remediation"]
    assert start["Resource"].endswith(":states:startExecution")
    assert start["Parameters"] == {
        "StateMachineArn": "${" + remediation + "}",
        "Name.$": "$.decision.decision_id",
        "Input.$": "$.decision",
    }
    assert [c["ErrorEquals"] for c in start["Catch"]] == [
        ["StepFunctions.ExecutionAlreadyExistsException"]
    ]


def test_a_node_left_out_of_service_alarms(template: Template) -> None:
    topic, _ = one(template, "AWS::SNS::Topic")
    _, alarm = one(template, "AWS::CloudWatch::Alarm", "AlarmsStrandedNodes")
    props = alarm["Properties"]
    assert props["AlarmName"] == "nodemedic-demo-stranded-nodes"
    assert props["AlarmActions"] == [{"Ref": topic}]
    assert (props["Threshold"], props["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    queries = {q["Id"]: q for q in props["Metrics"]}
    stranded = queries["stranded"]["MetricStat"]
    assert stranded["Metric"] == {
        "Namespace": "NodeMedic",
        "MetricName": "StrandedNodes",
        "Dimensions": [{"Name": "Cluster", "Value": "demo"}],
    }
    assert stranded["Stat"] == "Maximum"
    watched = {
        (q["MetricStat"]["Metric"]["MetricName"], str(q["MetricStat"]["Metric"]["Dimensions"]))
        for q in queries.values()
        if "MetricStat" in q and q["Id"] != "stranded"
    }
    assert watched == {
        (metric, str([{"Name": "StateMachineArn", "Value": {"Ref": machine}}]))
        for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted")
        for machine in (
            one(template, MACHINE, prefix)[0] for prefix in (CLEANUP, RECONCILE, REQUESTS)
        )
    }
    (expression,) = [q["Expression"] for q in queries.values() if "Expression" in q]
    # Each series alone can alarm: none waits for another's data.
    series = [i for i, q in queries.items() if "MetricStat" in q]
    assert expression == " + ".join(f"FILL({i}, 0)" for i in series)


def _states(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, those inside a Map's processor too."""
    for name, body in definition["States"].items():
        yield name, body
        if "ItemProcessor" in body:
            yield from _states(body["ItemProcessor"])


def test_only_a_lock_taken_over_meanwhile_makes_a_failed_renewal_pass_for_stranded(
    template: Template,
) -> None:
    """A renewal that failed for any other reason fails the reconcile run, which the
    stranded-nodes alarm counts, instead of passing silently for one that was done."""
    _, machine = one(template, MACHINE, RECONCILE)
    definition = json.loads(render(machine["Properties"]["DefinitionString"]))
    renew = dict(_states(definition))["Renew lease"]
    assert [c["ErrorEquals"] for c in renew["Catch"]] == [["DynamoDb.TransactionCanceledException"]]
