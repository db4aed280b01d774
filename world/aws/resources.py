"""One function per CloudFormation resource type the local world creates in moto, through
boto3 as CloudFormation would call the services, and the types it skips (``SKIPPED``, each
with the reason the local world can do without it).

A creator gets the resource's properties with every intrinsic function already resolved
(``cloudformation.Resolver``) and returns its ``Ref`` value and ``Fn::GetAtt`` attributes.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

from world.aws.cloudformation import Deployment
from world.aws.quotas import DEAD_LETTERS

Client = Callable[[str], Any]
"""A boto3 client by service name, one per service for the whole deployment."""
Created = tuple[str, dict[str, str]]
"""A created resource's ``Ref`` value and its ``Fn::GetAtt`` attributes."""
SKIPPED = {
    "AWS::EKS::AccessEntry": (
        "moto has no EKS access entries; locally the kube Lambda reaches the local "
        "kube-apiserver through KUBECONFIG as the nodemedic:remediator group, which is "
        "what the entry grants on EKS"
    ),
    "AWS::EKS::PodIdentityAssociation": (
        "moto has no EKS Pod Identity; locally the agent writes with the local credentials"
    ),
    "AWS::Lambda::EventInvokeConfig": "moto does not retry asynchronous invocations",
    "AWS::CDK::Metadata": "CDK version reporting, no resource",
}
"""Resource types the local world cannot create, with the reason it can do without them."""
_AWS_MANAGED = "arn:aws:iam::aws:policy/"


def placeholder_zip() -> bytes:
    """A Lambda bundle with nothing in it: moto needs a zip, the handler runs in-process."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "nodemedic local mode runs handlers in-process\n")
    return buffer.getvalue()


def _physical_name(deployment: Deployment, logical_id: str, limit: int = 64) -> str:
    return f"{deployment.stack_name}-{logical_id}"[:limit]


def _ddb_table(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    ddb = client("dynamodb")
    name = props.get("TableName") or _physical_name(d, lid, 255)
    args: dict[str, Any] = {
        "TableName": name,
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
    }
    if props.get("BillingMode") == "PAY_PER_REQUEST" or "ProvisionedThroughput" not in props:
        args["BillingMode"] = "PAY_PER_REQUEST"
    else:
        args["ProvisionedThroughput"] = props["ProvisionedThroughput"]
    if props.get("GlobalSecondaryIndexes"):
        args["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    if props.get("StreamSpecification"):
        args["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
    description = ddb.create_table(**args)["TableDescription"]
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
    attributes = {"Arn": description["TableArn"]}
    if "LatestStreamArn" in description:
        attributes["StreamArn"] = description["LatestStreamArn"]
    return name, attributes


def _iam_role(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    iam = client("iam")
    name = props.get("RoleName") or _physical_name(d, lid)
    role = iam.create_role(
        RoleName=name,
        Path=props.get("Path", "/"),
        Description=props.get("Description", ""),
        AssumeRolePolicyDocument=json.dumps(props["AssumeRolePolicyDocument"]),
    )["Role"]
    for arn in props.get("ManagedPolicyArns", []):
        # AWS managed policies exist in moto only when it loads all of them (seconds);
        # moto enforces no IAM, so attaching one would change nothing locally.
        if not arn.startswith(_AWS_MANAGED):
            iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    for policy in props.get("Policies", []):
        iam.put_role_policy(
            RoleName=name,
            PolicyName=policy["PolicyName"],
            PolicyDocument=json.dumps(policy["PolicyDocument"]),
        )
    return name, {"Arn": role["Arn"], "RoleId": role["RoleId"]}


def _iam_policy(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    """An inline policy on each of its roles."""
    name = props.get("PolicyName") or _physical_name(d, lid, 128)
    for role in props.get("Roles", []):
        client("iam").put_role_policy(
            RoleName=role, PolicyName=name, PolicyDocument=json.dumps(props["PolicyDocument"])
        )
    return name, {"Id": name}


def _managed_policy(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    iam = client("iam")
    name = props.get("ManagedPolicyName") or _physical_name(d, lid, 128)
    arn = iam.create_policy(
        PolicyName=name,
        Path=props.get("Path", "/"),
        Description=props.get("Description", ""),
        PolicyDocument=json.dumps(props["PolicyDocument"]),
    )["Policy"]["Arn"]
    for role in props.get("Roles", []):
        iam.attach_role_policy(RoleName=role, PolicyArn=arn)
    return arn, {"PolicyArn": arn}


def _kms_key(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    kms = client("kms")
    args: dict[str, Any] = {
        "Description": props.get("Description", ""),
        "KeyUsage": props.get("KeyUsage", "ENCRYPT_DECRYPT"),
        "KeySpec": props.get("KeySpec", "SYMMETRIC_DEFAULT"),
    }
    if "KeyPolicy" in props:
        args["Policy"] = json.dumps(props["KeyPolicy"])
    metadata = kms.create_key(**args)["KeyMetadata"]
    if props.get("EnableKeyRotation"):
        kms.enable_key_rotation(KeyId=metadata["KeyId"])
    return metadata["KeyId"], {"Arn": metadata["Arn"], "KeyId": metadata["KeyId"]}


def _kms_alias(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    client("kms").create_alias(AliasName=props["AliasName"], TargetKeyId=props["TargetKeyId"])
    return props["AliasName"], {}


def _sns_topic(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("TopicName") or _physical_name(d, lid, 256)
    attributes = _attributes(props, ("DisplayName", "FifoTopic", "KmsMasterKeyId"))
    arn = client("sns").create_topic(Name=name, Attributes=attributes)["TopicArn"]
    return arn, {"TopicArn": arn, "TopicName": name}


def _topic_policy(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    for topic in props["Topics"]:
        client("sns").set_topic_attributes(
            TopicArn=topic,
            AttributeName="Policy",
            AttributeValue=json.dumps(props["PolicyDocument"]),
        )
    return lid, {}


def _sns_subscription(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    arn = client("sns").subscribe(
        TopicArn=props["TopicArn"], Protocol=props["Protocol"], Endpoint=props["Endpoint"]
    )["SubscriptionArn"]
    return arn, {}


def _attributes(props: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """SNS and SQS attributes are strings: objects as JSON, booleans as ``true``/``false``."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        return json.dumps(value) if isinstance(value, dict) else str(value)

    return {name: text(props[name]) for name in names if name in props}


def _sqs_queue(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    sqs = client("sqs")
    name = props.get("QueueName") or _physical_name(d, lid, 80)
    attributes = _attributes(
        props,
        (
            "DelaySeconds",
            "FifoQueue",
            "KmsMasterKeyId",
            "MaximumMessageSize",
            "MessageRetentionPeriod",
            "ReceiveMessageWaitTimeSeconds",
            "RedrivePolicy",
            "SqsManagedSseEnabled",
            "VisibilityTimeout",
        ),
    )
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, {"Arn": arn, "QueueName": name, "QueueUrl": url}


def _queue_policy(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    for url in props["Queues"]:
        client("sqs").set_queue_attributes(
            QueueUrl=url, Attributes={"Policy": json.dumps(props["PolicyDocument"])}
        )
    return lid, {}


def _lambda_function(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("FunctionName") or _physical_name(d, lid)
    args: dict[str, Any] = {
        "FunctionName": name,
        "Runtime": props.get("Runtime", "python3.11"),
        "Role": props["Role"],
        "Handler": props["Handler"],
        "Code": {"ZipFile": placeholder_zip()},
        "Timeout": int(props.get("Timeout", 3)),
        "MemorySize": int(props.get("MemorySize", 128)),
    }
    if "Environment" in props:
        args["Environment"] = {
            "Variables": {k: str(v) for k, v in props["Environment"]["Variables"].items()}
        }
    # moto accepts and drops DeadLetterConfig and LoggingConfig: the world keeps the first
    # (``quotas.asynchronous_retries``), and the function logs to /aws/lambda/<name>.
    for key in ("DeadLetterConfig", "Description", "TracingConfig", "Architectures"):
        if key in props:
            args[key] = props[key]
    if "DeadLetterConfig" in props:
        DEAD_LETTERS[name] = props["DeadLetterConfig"]["TargetArn"]
    arn = client("lambda").create_function(**args)["FunctionArn"]
    return name, {"Arn": arn}


def _lambda_permission(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    args = {
        "FunctionName": props["FunctionName"],
        "StatementId": lid,
        "Action": props["Action"],
        "Principal": props["Principal"],
    }
    for key in ("SourceArn", "SourceAccount"):
        if key in props:
            args[key] = props[key]
    client("lambda").add_permission(**args)
    return lid, {}


def _log_group(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    logs = client("logs")
    name = props.get("LogGroupName") or f"/{d.stack_name}/{lid}"
    logs.create_log_group(logGroupName=name)
    if "RetentionInDays" in props:
        logs.put_retention_policy(logGroupName=name, retentionInDays=int(props["RetentionInDays"]))
    arn = f"arn:aws:logs:{d.region}:{d.account}:log-group:{name}:*"
    return name, {"Arn": arn}


def _subscription_filter(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("FilterName") or _physical_name(d, lid, 512)
    client("logs").put_subscription_filter(
        logGroupName=props["LogGroupName"],
        filterName=name,
        filterPattern=props.get("FilterPattern", ""),
        destinationArn=props["DestinationArn"],
    )
    return name, {}


def _state_machine(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("StateMachineName") or _physical_name(d, lid, 80)
    definition = props.get("DefinitionString")
    if definition is None:
        definition = json.dumps(props["Definition"])
    for key, value in props.get("DefinitionSubstitutions", {}).items():
        definition = definition.replace("${" + key + "}", str(value))
    # The logging configuration is not passed on: moto would only store it, and the local
    # world reads executions through their history instead.
    response = client("stepfunctions").create_state_machine(
        name=name,
        definition=definition,
        roleArn=props["RoleArn"],
        type=props.get("StateMachineType", "STANDARD"),
        tracingConfiguration={
            "enabled": bool(props.get("TracingConfiguration", {}).get("Enabled"))
        },
    )
    arn = response["stateMachineArn"]
    return arn, {"Arn": arn, "Name": name}


def _events_rule(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    """Stored with its targets, never fired: moto runs no schedule, Step Functions in moto
    sends no status-change events, and moto's EventBridge starts no state machine target.
    The tests start the targets with the events the rules match."""
    events = client("events")
    name = props.get("Name") or _physical_name(d, lid)
    args: dict[str, Any] = {"Name": name, "State": props.get("State", "ENABLED")}
    for key in ("Description", "ScheduleExpression"):
        if key in props:
            args[key] = props[key]
    if "EventPattern" in props:
        args["EventPattern"] = json.dumps(props["EventPattern"])
    arn = events.put_rule(**args)["RuleArn"]
    targets = [
        {k: v for k, v in target.items() if k in ("Id", "Arn", "RoleArn", "Input")}
        for target in props.get("Targets", [])
    ]
    if targets:
        events.put_targets(Rule=name, Targets=targets)
    return name, {"Arn": arn}


_ALARM_FIELDS = {
    "AlarmName",
    "AlarmDescription",
    "ActionsEnabled",
    "OKActions",
    "AlarmActions",
    "InsufficientDataActions",
    "MetricName",
    "Namespace",
    "Statistic",
    "ExtendedStatistic",
    "Dimensions",
    "Period",
    "Unit",
    "EvaluationPeriods",
    "DatapointsToAlarm",
    "Threshold",
    "ComparisonOperator",
    "TreatMissingData",
    "Metrics",
}


def _alarm(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    """Stored, never evaluated (moto does not evaluate alarms)."""
    args = {k: v for k, v in props.items() if k in _ALARM_FIELDS}
    args.setdefault("AlarmName", _physical_name(d, lid, 255))
    for key in ("Period", "EvaluationPeriods", "DatapointsToAlarm"):
        if key in args:
            args[key] = int(args[key])
    if "Threshold" in args:
        args["Threshold"] = float(args["Threshold"])
    client("cloudwatch").put_metric_alarm(**args)
    arn = f"arn:aws:cloudwatch:{d.region}:{d.account}:alarm:{args['AlarmName']}"
    return args["AlarmName"], {"Arn": arn}


def _dashboard(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("DashboardName") or _physical_name(d, lid, 255)
    client("cloudwatch").put_dashboard(DashboardName=name, DashboardBody=props["DashboardBody"])
    return name, {}


def _ssm_document(client: Client, d: Deployment, lid: str, props: dict[str, Any]) -> Created:
    name = props.get("Name") or _physical_name(d, lid, 128)
    content = props["Content"]
    client("ssm").create_document(
        Name=name,
        Content=content if isinstance(content, str) else json.dumps(content),
        DocumentType=props.get("DocumentType", "Command"),
        DocumentFormat="JSON",
    )
    return name, {}


CREATORS: dict[str, Callable[[Client, Deployment, str, dict[str, Any]], Created]] = {
    "AWS::KMS::Key": _kms_key,
    "AWS::KMS::Alias": _kms_alias,
    "AWS::IAM::Role": _iam_role,
    "AWS::IAM::Policy": _iam_policy,
    "AWS::IAM::ManagedPolicy": _managed_policy,
    "AWS::DynamoDB::Table": _ddb_table,
    "AWS::DynamoDB::GlobalTable": _ddb_table,
    "AWS::SNS::Topic": _sns_topic,
    "AWS::SNS::TopicPolicy": _topic_policy,
    "AWS::SNS::Subscription": _sns_subscription,
    "AWS::SQS::Queue": _sqs_queue,
    "AWS::SQS::QueuePolicy": _queue_policy,
    "AWS::Lambda::Function": _lambda_function,
    "AWS::Lambda::Permission": _lambda_permission,
    "AWS::Logs::LogGroup": _log_group,
    "AWS::Logs::SubscriptionFilter": _subscription_filter,
    "AWS::StepFunctions::StateMachine": _state_machine,
    "AWS::CloudWatch::Alarm": _alarm,
    "AWS::CloudWatch::Dashboard": _dashboard,
    "AWS::Events::Rule": _events_rule,
    "AWS::SSM::Document": _ssm_document,
}
