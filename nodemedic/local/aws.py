"""Create in moto the resources a synthesized CloudFormation template defines.

The local world deploys the very template ``cdk synth`` produces (``stacks.synth.
synth_template``: the whole PipelineStack): KMS keys, IAM roles and policies, tables,
topics and their policies, queues, log groups and subscription filters, Lambda functions
(a placeholder zip: the code runs in-process, see ``inprocess.py``) and their
permissions, alarms, the dashboard, and the state machine with its definition's
``Fn::Join``/``Ref``/``Fn::GetAtt``/``Fn::Sub`` resolved against the moto resources, then
the stack's outputs. A resource type moto cannot hold is skipped only with a reason
(``SKIPPED``); any other unknown type, and any intrinsic function this module does not
know, is an error, not a silently wrong value.

``node_group`` adds what the stack does not create but acts on: an Auto Scaling group of
instances. Where moto behaves otherwise than AWS in a way nodemedic depends on, the world
changes it (``motopatch.py`` names every change).

Public interface (used by the tests and the local demo):

- ``deploy(template, *, stack_name, region, endpoint_url) -> Deployment``
- ``Deployment.find(type, prefix)``, ``.of_type(type)``, ``.outputs``, ``.skipped``
- ``node_group(name, size, *, region, endpoint_url, instance_type, availability_zone)``
- ``QUICK_EC2``: environment for moto that skips loading its AMI catalog
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from graphlib import TopologicalSorter
from typing import Any

import boto3

Client = Callable[[str], Any]
Created = tuple[str, dict[str, str]]
"""A created resource's ``Ref`` value and its ``Fn::GetAtt`` attributes."""
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")
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
QUICK_EC2 = {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false"}
"""Environment for moto (set before its EC2 backend starts): skip loading the catalog of
public AMIs, seconds per fresh backend; ``node_group`` needs none of them."""
DEFAULT_AZ = "us-east-1a"
_AWS_MANAGED = "arn:aws:iam::aws:policy/"


class TemplateError(ValueError):
    """The template uses something the local world cannot create faithfully."""


@dataclass
class Resource:
    logical_id: str
    type: str
    ref: str
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def arn(self) -> str:
        return self.attributes["Arn"]


@dataclass
class Deployment:
    """What was created: resources by logical id, as CloudFormation would name them."""

    stack_name: str
    region: str
    account: str
    resources: dict[str, Resource] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    """The stack's outputs by name (``StateMachineArn``, ``TopicArn``, ...), resolved."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Logical ids of the resources not created, with the reason (``SKIPPED``)."""

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources.values() if r.type == type_]

    def find(self, type_: str, prefix: str = "") -> Resource:
        """The one resource of ``type_`` whose logical id starts with ``prefix`` (CDK logical
        ids begin with the construct path, e.g. ``RemediationStateMachine``)."""
        found = [r for r in self.of_type(type_) if r.logical_id.startswith(prefix)]
        if len(found) != 1:
            names = [r.logical_id for r in found]
            raise KeyError(f"expected one {type_} starting with {prefix!r}, found {names}")
        return found[0]


def placeholder_zip() -> bytes:
    """A Lambda bundle with nothing in it: moto needs a zip, the handler runs in-process."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "nodemedic local mode runs handlers in-process\n")
    return buffer.getvalue()


class _Resolver:
    def __init__(self, template: Mapping[str, Any], deployment: Deployment) -> None:
        self.template = template
        self.deployment = deployment
        self.pseudo = {
            "AWS::Region": deployment.region,
            "AWS::AccountId": deployment.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": deployment.stack_name,
            "AWS::StackId": (
                f"arn:aws:cloudformation:{deployment.region}:{deployment.account}:"
                f"stack/{deployment.stack_name}/local"
            ),
        }

    def ref(self, name: str) -> str:
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.deployment.resources:
            return self.deployment.resources[name].ref
        if name in self.deployment.skipped:
            raise TemplateError(f"Ref to {name!r}, skipped: {self.deployment.skipped[name]}")
        parameter = self.template.get("Parameters", {}).get(name)
        if parameter is not None and "Default" in parameter:
            return str(parameter["Default"])
        raise TemplateError(f"Ref to {name!r}, which is neither created nor a parameter")

    def get_att(self, name: str, attribute: str) -> str:
        resource = self.deployment.resources.get(name)
        if resource is None or attribute not in resource.attributes:
            raise TemplateError(f"Fn::GetAtt {name}.{attribute} is not known locally")
        return resource.attributes[attribute]

    def sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match[1]
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and name.split(".", 1)[0] in self.deployment.resources:
                logical, attribute = name.split(".", 1)
                return self.get_att(logical, attribute)
            return self.ref(name)

        return _SUB.sub(one, text).replace("${!", "${")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            function = self._functions.get(key)
            if function is not None:
                return function(arg)
            if key.startswith("Fn::"):
                raise TemplateError(f"{key} is not supported by the local world")
        return {k: self.resolve(v) for k, v in value.items()}

    @property
    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self.ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Sub": self._sub,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
        }

    def _get_att(self, arg: Any) -> str:
        name, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
        return self.get_att(name, attribute)

    def _join(self, arg: Any) -> str:
        delimiter, parts = arg
        return str(delimiter).join(str(p) for p in self.resolve(parts))

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else arg
        return self.sub(text, variables)

    def _select(self, arg: Any) -> Any:
        index, items = arg
        return self.resolve(items)[int(self.resolve(index))]

    def _split(self, arg: Any) -> list[str]:
        delimiter, text = arg
        return str(self.resolve(text)).split(delimiter)


def _references(value: Any) -> Iterator[str]:
    """Logical ids a property value refers to (Ref, GetAtt, Sub)."""
    if isinstance(value, list):
        for v in value:
            yield from _references(v)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                yield arg
            elif key == "Fn::GetAtt":
                yield arg.split(".", 1)[0] if isinstance(arg, str) else arg[0]
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                yield from (m.split(".", 1)[0] for m in _SUB.findall(text))
                if not isinstance(arg, str):
                    yield from _references(arg[1])
            else:
                yield from _references(arg)


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
    # moto accepts and drops DeadLetterConfig and LoggingConfig: a failed asynchronous
    # invocation is not re-queued, and the function logs to /aws/lambda/<name>.
    for key in ("DeadLetterConfig", "Description", "TracingConfig", "Architectures"):
        if key in props:
            args[key] = props[key]
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


_CREATORS: dict[str, Callable[[Client, Deployment, str, dict[str, Any]], Created]] = {
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
}


def deploy(
    template: Mapping[str, Any],
    *,
    stack_name: str = "nodemedic",
    region: str = "us-east-1",
    endpoint_url: str | None = None,
) -> Deployment:
    """Create the template's resources in moto (in-process ``mock_aws`` or a moto server at
    ``endpoint_url``), dependencies first, then resolve its outputs.

    Physical names are ``<stack_name>-<logical id>`` where the template gives none, so two
    stacks (two clusters) can live in one moto world.
    """
    client = _clients(region, endpoint_url)
    account = client("sts").get_caller_identity()["Account"]
    deployment = Deployment(stack_name=stack_name, region=region, account=account)
    resources: dict[str, Any] = dict(template.get("Resources", {}))
    unknown = {
        r["Type"] for r in resources.values() if r["Type"] not in _CREATORS.keys() | SKIPPED.keys()
    }
    if unknown:
        raise TemplateError(f"resource types the local world cannot create: {sorted(unknown)}")
    graph = {
        lid: {
            dep
            for dep in [*_references(r.get("Properties", {})), *_depends_on(r)]
            if dep in resources
        }
        for lid, r in resources.items()
    }
    resolver = _Resolver(template, deployment)
    for lid in TopologicalSorter(graph).static_order():
        type_ = resources[lid]["Type"]
        creator = _CREATORS.get(type_)
        if creator is None:
            deployment.skipped[lid] = SKIPPED[type_]
            continue
        props = resolver.resolve(resources[lid].get("Properties", {}))
        ref, attributes = creator(client, deployment, lid, props)
        deployment.resources[lid] = Resource(lid, type_, ref, attributes)
    deployment.outputs = {
        name: str(resolver.resolve(output["Value"]))
        for name, output in template.get("Outputs", {}).items()
    }
    return deployment


def _clients(region: str, endpoint_url: str | None) -> Client:
    @cache  # one client per service for the whole deployment, not one per resource
    def client(service: str) -> Any:
        return boto3.client(service, region_name=region, endpoint_url=endpoint_url)

    return client


def node_group(
    name: str,
    size: int,
    *,
    region: str = "us-east-1",
    endpoint_url: str | None = None,
    instance_type: str = "trn1.32xlarge",
    availability_zone: str = DEFAULT_AZ,
) -> list[str]:
    """An Auto Scaling group of ``size`` running instances, as an EKS managed node group
    is; their instance ids, sorted. Each instance carries the ``aws:autoscaling:groupName``
    tag the remediation role's reboot guardrail reads."""
    client = _clients(region, endpoint_url)
    template = f"{name}-nodes"
    client("ec2").create_launch_template(
        LaunchTemplateName=template,
        # moto validates no image id; a real group's would be the EKS accelerated AMI.
        LaunchTemplateData={"ImageId": "ami-0a1b2c3d4e5f60718", "InstanceType": instance_type},
    )
    autoscaling = client("autoscaling")
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": template},
        MinSize=size,
        MaxSize=size,
        DesiredCapacity=size,
        AvailabilityZones=[availability_zone],
    )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])
    return sorted(i["InstanceId"] for i in group["AutoScalingGroups"][0]["Instances"])


def _depends_on(resource: Mapping[str, Any]) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)
