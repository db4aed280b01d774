"""The job monitor's wiring in the synthesized template: every line of Container Insights'
application group reaches it, a schedule runs it every minute, it writes only its own
partitions of the ledger, its way into the cluster is its own group, and a failed job
pages."""

from __future__ import annotations

import json
from dataclasses import asdict

from nodemedic.contracts.env import ENV_JOB_BREAKER, ENV_LEDGER_TABLE
from nodemedic.contracts.jobs import JOB_LEADING_KEYS, JOBS_FAILED_METRIC, application_log_group
from nodemedic.contracts.kube import JOB_MONITOR_GROUP
from nodemedic.settings import ClusterSettings
from stacks.synth import synth_template
from tests.support.templates import SETTINGS, Template, one, resources


def _monitor(template: Template) -> tuple[str, dict[str, object]]:
    found = [
        (name, fn)
        for name, fn in resources(template, "AWS::Lambda::Function").items()
        if fn["Properties"]["Handler"] == "lambdas.jobs.handler.handler"
    ]
    assert len(found) == 1
    return found[0]


def test_the_application_log_group_and_a_schedule_invoke_the_job_monitor(
    template: Template,
) -> None:
    name, fn = _monitor(template)
    subscriptions = [
        f["Properties"]
        for f in resources(template, "AWS::Logs::SubscriptionFilter").values()
        if f["Properties"]["DestinationArn"] == {"Fn::GetAtt": [name, "Arn"]}
    ]
    assert [(s["LogGroupName"], s["FilterPattern"]) for s in subscriptions] == [
        (application_log_group(SETTINGS.name), "")
    ]
    [rule] = [
        r["Properties"]
        for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [name, "Arn"]}
    ]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    env = fn["Properties"]["Environment"]["Variables"]  # type: ignore[index]
    assert ENV_LEDGER_TABLE in env
    assert "DeadLetterConfig" in fn["Properties"]  # type: ignore[operator]


def test_the_job_monitor_may_only_query_and_put_ledger_items(template: Template) -> None:
    _, fn = _monitor(template)
    role = fn["Properties"]["Role"]["Fn::GetAtt"][0]  # type: ignore[index]
    statements = [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    allowed = [s for s in statements if s["Effect"] == "Allow"]
    dynamo = {a for s in allowed for a in _list(s["Action"]) if a.startswith("dynamodb:")}
    assert dynamo == {"dynamodb:Query", "dynamodb:PutItem"}
    ledger = [s for s in allowed if any(a.startswith("dynamodb:") for a in _list(s["Action"]))]
    assert all(s["Resource"] != "*" for s in ledger)
    # Its own partitions only: no node's lock, breaker or decision record.
    assert all(
        s["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [JOB_LEADING_KEYS]}}
        for s in ledger
    )
    # Nor in the recorders' partitions: it would vouch for decisions it did not make.
    (denied,) = [s for s in statements if s["Effect"] == "Deny"]
    assert denied["Condition"] == {
        "ForAnyValue:StringLike": {
            "dynamodb:LeadingKeys": ["recorded#classifier", "recorded#planned", "registration#*"]
        }
    }


def test_the_job_monitor_enters_the_cluster_as_its_own_group(template: Template) -> None:
    _, fn = _monitor(template)
    role = fn["Properties"]["Role"]["Fn::GetAtt"][0]  # type: ignore[index]
    groups = {
        tuple(e["Properties"]["KubernetesGroups"])
        for e in resources(template, "AWS::EKS::AccessEntry").values()
        if e["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [role, "Arn"]}
    }
    assert groups == {(JOB_MONITOR_GROUP,)}


def test_a_failed_job_pages(template: Template) -> None:
    _, alarm = one(template, "AWS::CloudWatch::Alarm", "JobsJobsFailed")
    [query] = [m["Expression"] for m in alarm["Properties"]["Metrics"] if "Expression" in m]
    assert JOBS_FAILED_METRIC in query and "Job" in query
    assert alarm["Properties"]["AlarmActions"]


def _list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def test_a_cluster_that_did_not_choose_job_monitoring_subscribes_to_no_application_logs(
    plain_template: Template,
) -> None:
    """Off by default: it needs Container Insights' group to exist, and it costs an
    invocation per container line."""
    plain = plain_template
    assert [
        f["Properties"]["LogGroupName"]
        for f in resources(plain, "AWS::Logs::SubscriptionFilter").values()
        if f["Properties"]["LogGroupName"] == application_log_group("plain")
    ] == []
    assert not [
        fn
        for fn in resources(plain, "AWS::Lambda::Function").values()
        if fn["Properties"]["Handler"] == "lambdas.jobs.handler.handler"
    ]


def test_the_job_monitor_gets_the_clusters_job_breaker_and_monitor_only_setting(
    template: Template,
) -> None:
    _, fn = _monitor(template)
    env = fn["Properties"]["Environment"]["Variables"]  # type: ignore[index]
    assert json.loads(env[ENV_JOB_BREAKER]) == asdict(SETTINGS.job_limits)
    quiet = synth_template(
        ClusterSettings(name="quiet", job_monitoring=True, dry_run=True, job_restarts_per_window=5)
    )
    _, fn = _monitor(quiet)
    limits = json.loads(fn["Properties"]["Environment"]["Variables"][ENV_JOB_BREAKER])  # type: ignore[index]
    assert limits["monitor_only"] is True and limits["restarts_per_window"] == 5
