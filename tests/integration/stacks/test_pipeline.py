"""The synthesized pipeline stack: what a platform engineer deploys for one cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import yaml
from aws_cdk import assertions
from aws_cdk import aws_stepfunctions as sfn

from lambdas.classify.env import ClassifyEnv
from nodemedic.catalog import load_catalog
from nodemedic.contracts.env import (
    ENV_ACCEPT_INJECTED,
    ENV_CLUSTER,
    HYPERPOD_EVENTS_ENV,
    HYPERPOD_LOG_GROUPS_ENV,
)
from nodemedic.contracts.kube import REMEDIATOR_GROUP
from nodemedic.contracts.release import VERSION
from nodemedic.contracts.stack import VERSION_OUTPUT
from nodemedic.detect.filterpattern import subscription_filter_patterns
from nodemedic.settings import ClusterSettings
from stacks.agent_access import AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT
from stacks.bundling import RUNTIME
from stacks.guardrails import guard_remediation
from stacks.pipeline import PipelineStack
from stacks.recorded import LEDGER_WRITES
from stacks.synth import NO_BUNDLING, synth_template
from tests.support.paths import ROOT
from tests.support.templates import (
    MACHINE,
    REMEDIATION,
    SETTINGS,
    Template,
    actions,
    one,
    render,
    resources,
    statements,
)


def _function(template: Template, handler: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (k, r)
        for k, r in resources(template, "AWS::Lambda::Function").items()
        if r["Properties"]["Handler"] == handler
    ]
    return found


def _role_of(function: dict[str, Any]) -> str:
    return str(function["Properties"]["Role"]["Fn::GetAtt"][0])


def test_a_cluster_that_accepts_injected_faults_tells_its_classifier() -> None:
    settings = ClusterSettings(name="drill", accept_injected_faults=True)
    _, classifier = _function(synth_template(settings), "lambdas.classify.handler.handler")
    assert classifier["Properties"]["Environment"]["Variables"][ENV_ACCEPT_INJECTED] == "true"


def test_a_cluster_with_hyperpod_tells_its_classifier_the_groups_it_and_the_trust() -> None:
    """The classify handler refuses to start with HyperPod groups but no cluster name, and
    HyperPod's events act only where the settings say so."""
    settings = ClusterSettings(
        name="ml", hyperpod_clusters=(("ml-cluster", "abcdef123456"),), hyperpod_events="act"
    )
    _, classifier = _function(synth_template(settings), "lambdas.classify.handler.handler")
    variables = classifier["Properties"]["Environment"]["Variables"]
    assert variables[HYPERPOD_LOG_GROUPS_ENV] == "/aws/sagemaker/Clusters/ml-cluster/abcdef123456"
    assert variables[ENV_CLUSTER] == "ml"
    assert variables[HYPERPOD_EVENTS_ENV] == "act"
    read = ClassifyEnv.from_environ(variables)  # as the handler reads it, without an error
    assert read.hyperpod_act and read.cluster == "ml"


def test_agents_write_to_the_cluster_log_group_with_its_retention(template: Template) -> None:
    (log_id, group) = next(
        (k, r)
        for k, r in resources(template, "AWS::Logs::LogGroup").items()
        if r["Properties"].get("LogGroupName") == "/nodemedic/demo/nodes"
    )
    assert group["Properties"]["RetentionInDays"] == 14
    _, policy = one(template, "AWS::IAM::ManagedPolicy", "Agent")
    statement, seal = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow"
    assert sorted(actions(statement)) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert statement["Resource"] == {"Fn::GetAtt": [log_id, "Arn"]}
    # Registrations sealed under the cluster's origin key, for this cluster only.
    key_id, _ = one(template, "AWS::KMS::Key", "Origin")
    assert (seal["Effect"], seal["Action"]) == ("Allow", "kms:Encrypt")
    assert seal["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert seal["Condition"] == {
        "StringEquals": {"kms:EncryptionContext:nodemedic:cluster": "demo"}
    }
    _, association = one(template, "AWS::EKS::PodIdentityAssociation")
    assert association["Properties"]["ClusterName"] == "demo-eks"
    assert association["Properties"]["Namespace"] == AGENT_NAMESPACE
    assert association["Properties"]["ServiceAccount"] == AGENT_SERVICE_ACCOUNT
    role_id = association["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    # The managed policy's statements are all the agents may do.
    assert list(statements(template, role_id)) == [statement, seal]
    trust = template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]
    (trust_statement,) = trust["Statement"]
    assert trust_statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(actions(trust_statement)) == ["sts:AssumeRole", "sts:TagSession"]


def test_the_subscription_filters_send_the_catalogs_lines_to_the_classifier(
    template: Template,
) -> None:
    filters = sorted(
        (
            f
            for f in resources(template, "AWS::Logs::SubscriptionFilter").values()
            if f["Properties"]["FilterName"] != "nodemedic-jobs"  # the job monitor's
        ),
        key=lambda r: str(r["Properties"]["FilterName"]),
    )
    expected = subscription_filter_patterns(load_catalog())
    assert [f["Properties"]["FilterPattern"] for f in filters] == expected
    assert [f["Properties"]["FilterName"] for f in filters][:1] == ["nodemedic-faults"]
    group = {
        "Ref": next(
            k
            for k, r in resources(template, "AWS::Logs::LogGroup").items()
            if r["Properties"].get("LogGroupName") == "/nodemedic/demo/nodes"
        )
    }
    classifier_id, _ = _function(template, "lambdas.classify.handler.handler")
    for props in (f["Properties"] for f in filters):
        assert props["LogGroupName"] == group
        assert props["DestinationArn"] == {"Fn::GetAtt": [classifier_id, "Arn"]}
    permissions = [
        p
        for p in resources(template, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [classifier_id, "Arn"]}
    ]
    assert permissions and all(
        p["Properties"]["Principal"] == "logs.amazonaws.com" for p in permissions
    )


def test_the_classifier_has_a_dead_letter_queue_and_its_contract_environment(
    template: Template,
) -> None:
    _, classifier = _function(template, "lambdas.classify.handler.handler")
    props = classifier["Properties"]
    queue_id, queue = one(template, "AWS::SQS::Queue")
    assert props["DeadLetterConfig"] == {"TargetArn": {"Fn::GetAtt": [queue_id, "Arn"]}}
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    machine_id, _ = one(template, MACHINE, REMEDIATION)
    table_id, _ = one(template, "AWS::DynamoDB::Table", "IngestIdempotency")
    assert props["Environment"]["Variables"] == {
        "STATE_MACHINE_ARN": {"Ref": machine_id},
        "IDEMPOTENCY_TABLE": {"Ref": table_id},
        # Where it records the agents' heartbeats.
        "LEDGER_TABLE": {"Ref": one(template, "AWS::DynamoDB::Table", "RemediationLedger")[0]},
        # The cluster setting accept_injected_faults, off unless the cluster turns it on.
        "NODEMEDIC_ACCEPT_INJECTED_FAULTS": "false",
        # proof_of_origin enforced, against AWS's vendored certificates.
        "NODEMEDIC_PROOF_OF_ORIGIN": "enforce",
        "NODEMEDIC_IDENTITY_CERTIFICATES": "",
        # stale_after: a fault line heard an hour after it was logged is only notified.
        "NODEMEDIC_STALE_AFTER": "3600",
        "POWERTOOLS_SERVICE_NAME": "nodemedic-classify",
        "POWERTOOLS_METRICS_NAMESPACE": "NodeMedic",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    assert props["Runtime"] == RUNTIME.name
    # Traced only when its caller is: Lambda would record a heartbeat's trace every second.
    assert props["TracingConfig"] == {"Mode": "PassThrough"}


def test_a_cluster_may_trace_its_classifier_actively() -> None:
    settings = ClusterSettings(name="traced", classifier_tracing=True)
    _, classifier = _function(synth_template(settings), "lambdas.classify.handler.handler")
    assert classifier["Properties"]["TracingConfig"] == {"Mode": "Active"}


def test_the_classifier_may_start_executions_and_use_its_table_only(template: Template) -> None:
    _, classifier = _function(template, "lambdas.classify.handler.handler")
    machine_id, _ = one(template, MACHINE, REMEDIATION)
    table_id, _ = one(template, "AWS::DynamoDB::Table", "IngestIdempotency")
    ledger_id, _ = one(template, "AWS::DynamoDB::Table", "RemediationLedger")
    granted: dict[str, list[Any]] = {}
    ledger: dict[tuple[str, ...], Any] = {}
    for statement in statements(template, _role_of(classifier)):
        assert statement["Effect"] == "Allow"
        resource = statement["Resource"]
        if resource == {"Fn::GetAtt": [ledger_id, "Arn"]}:
            # The ledger: heartbeats, the markers of the decisions it starts, and the
            # registrations it proved; only there.
            ledger[tuple(sorted(actions(statement)))] = statement["Condition"]
            continue
        for action in actions(statement):
            granted[action] = resource if isinstance(resource, list) else [resource]
    assert ledger == {
        ("dynamodb:UpdateItem",): {
            "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["heartbeat"]}
        },
        ("dynamodb:PutItem",): {
            "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["recorded#classifier"]}
        },
        ("dynamodb:Query", "dynamodb:UpdateItem"): {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["registration#*"]}
        },
    }
    assert granted["states:StartExecution"] == [{"Ref": machine_id}]
    for action in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
        assert granted[f"dynamodb:{action}"] == [{"Fn::GetAtt": [table_id, "Arn"]}]
    key_id, _ = one(template, "AWS::KMS::Key", "Origin")
    assert granted["kms:Decrypt"] == [{"Fn::GetAtt": [key_id, "Arn"]}]
    (identity_streams,) = granted["logs:GetLogEvents"]
    assert json.dumps(identity_streams).endswith(
        ':log-group:/nodemedic/demo/nodes:log-stream:*/identity"]]}'
    )
    wildcard = {a for a, resource in granted.items() if resource == ["*"]}
    assert wildcard == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    assert not any(a.startswith("cloudwatch:") for a in granted)


def test_tables_expire_and_recover(template: Template) -> None:
    _, idempotency = one(template, "AWS::DynamoDB::Table", "IngestIdempotency")
    props = idempotency["Properties"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert props["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    for table in resources(template, "AWS::DynamoDB::Table").values():
        recovery = table["Properties"]["PointInTimeRecoverySpecification"]
        assert recovery["PointInTimeRecoveryEnabled"] is True


def test_the_state_machine_logs_everything_and_is_traced(template: Template) -> None:
    _, machine = one(template, MACHINE, REMEDIATION)
    props = machine["Properties"]
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is True


def test_the_kube_lambda_uses_the_ledgers_heartbeats_and_the_gates_records_only(
    template: Template,
) -> None:
    """The post-reboot gate's record is written by the kube Lambda alone (its pass time and
    hold start must be out of a node's reach); locks, breakers and decisions are not its."""
    _, kube = _function(template, "lambdas.kube.handler.handler")
    ledger_id, _ = one(template, "AWS::DynamoDB::Table", "RemediationLedger")
    on_ledger = [
        s
        for s in statements(template, _role_of(kube))
        if s["Resource"] == {"Fn::GetAtt": [ledger_id, "Arn"]}
    ]
    (statement,) = on_ledger
    assert actions(statement) == ["dynamodb:Query", "dynamodb:UpdateItem"]
    assert statement["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["heartbeat", "deep-check"]}
    }


def test_the_kube_lambda_enters_the_cluster_as_the_rbac_group(template: Template) -> None:
    _, kube = _function(template, "lambdas.kube.handler.handler")
    assert kube["Properties"]["Environment"]["Variables"]["EKS_CLUSTER_NAME"] == "demo-eks"
    _, entry = one(template, "AWS::EKS::AccessEntry", "Kube")
    role_id = _role_of(kube)
    assert entry["Properties"] == {
        "ClusterName": "demo-eks",
        "PrincipalArn": {"Fn::GetAtt": [role_id, "Arn"]},
        "KubernetesGroups": [REMEDIATOR_GROUP],
        "Type": "STANDARD",
    }
    describe = [s for s in statements(template, role_id) if "eks:DescribeCluster" in actions(s)]
    (statement,) = describe
    assert render(statement["Resource"]).endswith(":cluster/demo-eks")
    # The ClusterRoleBinding in rbac.yaml binds the group the access entry names.
    documents = yaml.safe_load_all((ROOT / "lambdas/kube/rbac.yaml").read_text())
    subjects = [
        subject
        for document in documents
        if document and document.get("kind") == "ClusterRoleBinding"
        for subject in document["subjects"]
    ]
    assert {"kind": "Group", "name": REMEDIATOR_GROUP} in [
        {"kind": s["kind"], "name": s["name"]} for s in subjects
    ]


GUARDED = {
    "ec2:rebootinstances": "RebootOnlyConfiguredNodeGroups",
    "autoscaling:setinstancehealth": "ReplaceOnlyInConfiguredNodeGroups",
    "cloudwatch:putmetricdata": "MetricsOnlyToNodeMedicNamespaces",
}
"""Actions whose scope rests on a condition or a name pattern: the deny that limits each."""
WITHOUT_RESOURCE_LEVEL = {
    "xray:puttracesegments",
    "xray:puttelemetryrecords",
    "xray:getsamplingrules",
    "xray:getsamplingtargets",
    "logs:createlogdelivery",
    "logs:getlogdelivery",
    "logs:updatelogdelivery",
    "logs:deletelogdelivery",
    "logs:listlogdeliveries",
    "logs:putresourcepolicy",
    "logs:describeresourcepolicies",
    "logs:describeloggroups",
    "autoscaling:describeautoscalinginstances",
    "autoscaling:describeautoscalinggroups",
    "ec2:describeinstances",
    "cloudwatch:putmetricdata",
}
"""Actions IAM cannot limit by resource (Step Functions' log delivery and X-Ray included)."""


def _roles(template: Template) -> dict[str, list[dict[str, Any]]]:
    return {
        role_id: list(statements(template, role_id))
        for role_id in resources(template, "AWS::IAM::Role")
    }


def _lower(statement: dict[str, Any]) -> set[str]:
    return {a.lower() for a in actions(statement)}


def test_no_role_may_act_on_everything(template: Template) -> None:
    """'*' as the resource only where IAM knows no narrower one, and no AWS managed
    policy (they grant more than a role here needs)."""
    for role_id, granted in _roles(template).items():
        attached = template["Resources"][role_id]["Properties"].get("ManagedPolicyArns", [])
        assert all(set(arn) == {"Ref"} for arn in attached), role_id
        for statement in granted:
            assert "*" not in actions(statement), role_id
            assert not any(a.endswith(":*") for a in actions(statement)), role_id
            if statement["Effect"] == "Allow" and statement["Resource"] == "*":
                assert _lower(statement) <= WITHOUT_RESOURCE_LEVEL, (role_id, statement)


def test_only_the_state_machine_may_reboot_replace_or_publish_metrics(
    template: Template,
) -> None:
    _, machine = one(template, MACHINE, REMEDIATION)
    machine_role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    for role_id, granted in _roles(template).items():
        allowed = set().union(*(_lower(s) for s in granted if s["Effect"] == "Allow"))
        if role_id != machine_role:
            assert not allowed & set(GUARDED), role_id
            continue
        denies = {s["Sid"]: s for s in granted if s["Effect"] == "Deny"}
        for action, sid in GUARDED.items():
            assert action in allowed
            assert _lower(denies[sid]) == {action}


def test_remediation_may_reboot_and_replace_only_in_the_configured_node_groups(
    template: Template,
) -> None:
    _, machine = one(template, MACHINE, REMEDIATION)
    role_id = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    denies = {s["Sid"]: s for s in statements(template, role_id) if s["Effect"] == "Deny"}
    reboot = denies["RebootOnlyConfiguredNodeGroups"]
    assert reboot["Resource"] == "*"
    # The tag Auto Scaling puts on every instance it launches.
    assert reboot["Condition"] == {
        "StringNotEquals": {"aws:ResourceTag/aws:autoscaling:groupName": ["demo-trn1", "demo-p5"]}
    }
    replace = denies["ReplaceOnlyInConfiguredNodeGroups"]
    assert [render(arn) for arn in replace["NotResource"]] == [
        "arn:${AWS::Partition}:autoscaling:${AWS::Region}:${AWS::AccountId}:"
        f"autoScalingGroup:*:autoScalingGroupName/{group}"
        for group in ("demo-trn1", "demo-p5")
    ]
    metrics = denies["MetricsOnlyToNodeMedicNamespaces"]
    assert metrics["Resource"] == "*"
    assert metrics["Condition"] == {
        "StringNotEquals": {"cloudwatch:namespace": ["NeuronHealthCheck", "NodeMedic"]}
    }
    # Whatever the allow says, the names it may replace are the configured groups'.
    (allow,) = [
        s
        for s in statements(template, role_id)
        if s["Effect"] == "Allow" and "autoscaling:setinstancehealth" in _lower(s)
    ]
    for arn in allow["Resource"]:
        assert render(arn).rsplit("/", 1)[1] in SETTINGS.node_groups


MARKERS = ["recorded#classifier", "recorded#planned"]
"""The recorders' partitions of the ledger (``nodemedic.contracts.ledger``)."""
KEPT = "registration#*"
"""The classifier's kept registrations."""


def test_only_its_recorder_may_write_a_decisions_marker_or_a_kept_registration(
    template: Template,
) -> None:
    """Every role that may write the ledger: the classifier and the planned Lambda in their
    own partitions only; any other (the state machine, the job monitor) is denied them all."""
    ledger_id, _ = one(template, "AWS::DynamoDB::Table", "RemediationLedger")
    ledger = {"Fn::GetAtt": [ledger_id, "Arn"]}
    writes = {a.lower() for a in LEDGER_WRITES}
    partitions: dict[str, set[str]] = {}
    for role_id, granted in _roles(template).items():
        on_ledger = [s for s in granted if ledger in _listed(s.get("Resource"))]
        for statement in on_ledger:
            if statement["Effect"] != "Allow" or not _lower(statement) & writes:
                continue
            condition = statement.get("Condition", {})
            only = condition.get("ForAllValues:StringEquals", {})
            keys = only.get("dynamodb:LeadingKeys", [])
            keys += condition.get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [])
            if not keys:
                keys = None
                (denied,) = [s for s in on_ledger if s["Effect"] == "Deny"]
                assert _lower(denied) == writes, role_id
                assert denied["Condition"] == {
                    "ForAnyValue:StringLike": {"dynamodb:LeadingKeys": [*MARKERS, KEPT]}
                }
            partitions.setdefault(role_id, set()).update(keys or ["*"])
    _, classifier = _function(template, "lambdas.classify.handler.handler")
    _, planned = _function(template, "lambdas.planned.handler.handler")
    recorders = {role: found & {*MARKERS, KEPT} for role, found in partitions.items()}
    assert {role: found for role, found in recorders.items() if found} == {
        _role_of(classifier): {"recorded#classifier", KEPT},
        _role_of(planned): {"recorded#planned"},
    }
    _, machine = one(template, MACHINE, REMEDIATION)
    assert partitions[machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]] == {"*"}


def _listed(resource: Any) -> list[Any]:
    return resource if isinstance(resource, list) else [resource]


def test_without_node_groups_remediation_may_reboot_and_replace_nothing() -> None:
    stack = cdk.Stack(cdk.App(), "guard")
    machine = sfn.StateMachine(
        stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P"))
    )
    guard_remediation(machine, ClusterSettings(name="watch"), ["NodeMedic"])
    (policy,) = assertions.Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
    denies = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    for sid in ("RebootOnlyConfiguredNodeGroups", "ReplaceOnlyInConfiguredNodeGroups"):
        assert denies[sid]["Effect"] == "Deny"
        assert denies[sid]["Resource"] == "*"
        assert "Condition" not in denies[sid]


def test_the_topic_is_encrypted_and_mails_the_configured_addresses(template: Template) -> None:
    topic_id, topic = one(template, "AWS::SNS::Topic")
    key_id, key = one(template, "AWS::KMS::Key", "Notifications")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    alarm_use = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert alarm_use, "CloudWatch alarms cannot publish to the encrypted topic"
    mails = sorted(
        (s["Properties"]["Protocol"], s["Properties"]["Endpoint"], s["Properties"]["TopicArn"])
        for s in resources(template, "AWS::SNS::Subscription").values()
    )
    assert mails == [
        ("email", "ml-infra@example.com", {"Ref": topic_id}),
        ("email", "oncall@example.com", {"Ref": topic_id}),
    ]


def test_functions_log_to_their_own_group_with_the_retention(template: Template) -> None:
    groups = resources(template, "AWS::Logs::LogGroup")
    for function_id, function in resources(template, "AWS::Lambda::Function").items():
        assert function["Properties"]["Runtime"] == RUNTIME.name, function_id
        if function["Properties"]["Handler"] != "lambdas.classify.handler.handler":
            assert function["Properties"]["TracingConfig"] == {"Mode": "Active"}, function_id
        logging = function["Properties"]["LoggingConfig"]["LogGroup"]
        assert groups[logging["Ref"]]["Properties"]["RetentionInDays"] == 14
        role = template["Resources"][_role_of(function)]["Properties"]
        assert "ManagedPolicyArns" not in role


def test_the_template_needs_no_parameters_but_the_bootstrap_version(template: Template) -> None:
    assert set(template.get("Parameters", {})) == {"BootstrapVersion"}
    assert "us-east-1" not in json.dumps(template)


def test_the_stack_says_which_release_it_is(template: Template) -> None:
    """What a rollback compares with the agents' ``nodemedic_agent_info`` (releasing.md)."""
    assert template["Outputs"][VERSION_OUTPUT]["Value"] == VERSION


USER_RULES = """\
schema: 1
rules:
  - id: site-psu-failure
    source: kmsg
    pattern: 'ipmi: PSU (?P<psu>\\d+) lost its input power'
    component: cpu
    severity: fatal
    action: replace
    metric: SitePsuFailure
    summary: A power supply failed
    example: 'ipmi: PSU 1 lost its input power'
"""


def test_a_users_catalog_reaches_filter_alarms_and_the_classifier(
    template: Template, tmp_path: Path
) -> None:
    extra = tmp_path / "site-rules.yaml"
    extra.write_text(USER_RULES)
    app = cdk.App(context=NO_BUNDLING)
    stack = PipelineStack(
        app,
        "nodemedic-demo",
        settings=SETTINGS,
        catalog=load_catalog([extra]),
        catalog_files=[extra],
    )
    custom = app.synth().get_stack_by_name(stack.stack_name).template
    patterns = [
        f["Properties"]["FilterPattern"]
        for f in resources(custom, "AWS::Logs::SubscriptionFilter").values()
    ]
    assert any('?"lost its input power"' in pattern for pattern in patterns)
    alarms = [
        a["Properties"]["AlarmName"] for a in resources(custom, "AWS::CloudWatch::Alarm").values()
    ]
    assert "nodemedic-demo-SitePsuFailure" in alarms
    _, classifier = _function(custom, "lambdas.classify.handler.handler")
    variables = classifier["Properties"]["Environment"]["Variables"]
    assert variables["NODEMEDIC_CATALOG_EXTRA"] == "/var/task/catalog/0-site-rules.yaml"
    # Another bundle: the code asset changes with the rules it carries.
    _, default_classifier = _function(template, "lambdas.classify.handler.handler")
    assert classifier["Properties"]["Code"] != default_classifier["Properties"]["Code"]
