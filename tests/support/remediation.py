"""Shared pieces of the remediation tests.

The state machine under test is the one ``cdk synth`` produces: the whole PipelineStack
of ``stacks.synth.synth_template``, deployed into moto by ``world.aws.stack.deploy``.
Three clusters' stacks, one per recovery setting, can share one moto world: ``demo``
acts, ``watch`` only monitors (recovery mode None), ``dry`` is a dry run. Their settings
are also the ones the definition tests read, so the suite synthesizes three stacks.

Kubernetes is one real kube-apiserver per session with simulated kubelets
(``tests.support.kube_fixtures``); each test makes its own node group, so tests share
nothing but the control plane."""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import boto3

from lambdas.recorded import record_start
from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.decision import Identity, decide
from nodemedic.remediate.recorded import recorder
from nodemedic.settings import ClusterSettings
from stacks.synth import synth_template
from tests.support.origin import CERTIFICATE
from tests.support.templates import MACHINE, REMEDIATION
from world.aws.cloudformation import Deployment
from world.aws.inbox import Inbox
from world.aws.stack import node_group

REGION = "us-east-1"
MOTO: Any = {"stepfunctions": {"execute_state_machine": True}}
FAST: dict[str, Any] = {
    # proof_of_origin stays enforce: World.ship signs as the node's agent does.
    "identity_certificates": (CERTIFICATE,),
    "poll_seconds": 1,
    "drain_timeout": 4,
    "reboot_timeout": 4,
    "breaker_hold": 60,
    "fleet_window": 15,
    "fleet_settle": 2,
    "deep_check_timeout": 3,
    "quarantine_window": 15,
    "quarantine_cluster_percent": 100,
}
"""Every wait loop of the state machine polls once a second and gives up within seconds; a
fault's fleet window and a quarantine window last seconds, not minutes. The cluster's Nodes
are those of the test running (each test's are deleted after it), so its quarantine share is
all of them; the windows a test's decisions joined are emptied after it (``own_nodes``)."""
NODE_GROUPS = (
    "trn1-dma",
    "p5-reboot",
    "p5-hang",
    "p5-xid-46",
    "trn1-wide",
    "trn1-twice",
    "p5-notify",
    "p5-ghost",
    "trn1-watch",
    "trn1-dry",
    "p5-upgrade",
    "p5-rebooted",
    "p5-weaker",
    "p5-late",
    "trn1-fail",
    "trn1-aborted",
    "trn1-timed-out",
    "trn1-reconcile",
    "trn1-refused",
    "p5-sweep",
    "trn1-rate",
    "trn1-reset",
    "p5-cap-a",
    "p5-cap-b",
    "trn1-parked",
    "p5-parked",
    "p5-silent",
    "trn1-fleet",
    "trn1-fleet-late",
    "trn1-spread",
    "trn1-mixed",
    "p5-forged",
    "p5-forged-start",
    "p5-forged-replay",
    "p5-manual",
    "p5-manual-held",
    "p5-labelled",
    "trn1-resume",
    "p5-deep-failed",
    "p5-deep-passed",
    "p5-spares",
    "p5-no-spares",
    "p5-gate-passed",
    "p5-gate-early",
    "p5-gate-late",
    "p5-gate-between",
    "p5-gate-failed",
    "p5-gate-overdue",
    "p5-ungated",
    "p5-huge",
    "p5-gate-outage",
    "p5-gate-old-key",
    "p5-maintenance",
    "p5-maintenance-gated",
    "p5-ours",
    "p5-retiring",
    "p5-throttled",
    "p5-capacity-block",
    "g6-reset",
    "g6-reset-fails",
    "g6-reset-twice",
    "g6-reset-partial",
    "g6-reset-partial-fails",
    "g6-reset-deep-record",
    "p5-reset",
    "p5-hyperpod",
    "p5-hyperpod-notify",
)
"""The Auto Scaling groups nodemedic may act on: one per test, so tests share no breaker."""
ACTING = ClusterSettings(
    name="demo",
    node_groups=NODE_GROUPS,
    # The breaker test replaces a whole group of 10; the rate limits have their own tests.
    replacements_per_hour=10,
    replacements_per_day=10,
    spares=(("p5-spares", 1), ("p5-huge", 1)),
    **FAST,
)
WATCH = ClusterSettings(
    name="watch",
    recovery_mode="None",
    node_groups=NODE_GROUPS,
    max_unhealthy_percent=10,
    max_parallel=3,
    escalation_window=1200,
    **FAST,
)
DRY = ClusterSettings(
    name="dry",
    dry_run=True,
    node_groups=NODE_GROUPS,
    # A dry run never waits, so its waits can show how settings become loop bounds.
    poll_seconds=7,
    drain_timeout=70,
    reboot_timeout=140,
    breaker_hold=700,
)
UNGATED = ClusterSettings(
    name="ungated", node_groups=NODE_GROUPS, post_reboot_deep_check=False, **FAST
)
"""A reboot gives the node back at its new boot id (no post-reboot deep check); deployed
only in the modules that ask for it (the ``clusters`` fixture)."""
UNSET = ClusterSettings(name="unset", **FAST)
"""The default settings: no node group listed."""
EXAMPLES = {rule.id: rule.example for rule in default_classifier().catalog.rules}


def acting_template() -> dict[str, Any]:
    """The template of the acting cluster, as ``cdk synth`` writes it."""
    return synth_template(ACTING)


def state_machine_definition(
    template: dict[str, Any], machine_id: str = REMEDIATION
) -> dict[str, Any]:
    """The definition of the state machine whose logical id starts with ``machine_id``, with
    each CloudFormation reference replaced by ``${LogicalId}`` or ``${LogicalId.Attribute}``,
    for looking at its states without deploying."""
    (machine,) = (
        r
        for k, r in template["Resources"].items()
        if r["Type"] == MACHINE and k.startswith(machine_id)
    )
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else _placeholder(p) for p in parts)
    definition: dict[str, Any] = json.loads(text)
    return definition


def lambda_target(state: dict[str, Any], template: dict[str, Any]) -> str:
    """The construct path of the function a Lambda task invokes."""
    logical_id = state["Resource"].removeprefix("${").removesuffix(".Arn}")
    return str(template["Resources"][logical_id]["Properties"]["Handler"])


def _placeholder(reference: dict[str, Any]) -> str:
    name = reference["Ref"] if "Ref" in reference else ".".join(reference["Fn::GetAtt"])
    return "${" + name + "}"


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decision(
    instance_id: str,
    fault_id: str = "neuron-dma-error",
    *,
    cluster: str = "demo",
    line: str | None = None,
    first_seen: datetime | None = None,
    gpu_reset: bool = False,
) -> dict[str, Any]:
    """The decision record the classifier makes of ``line`` (the rule's catalog example by
    default) on ``instance_id``'s node, first seen now, in a cluster whose ``gpu_reset`` is
    so."""
    text = line or EXAMPLES[fault_id]
    fault = default_classifier().classify(text)
    assert fault is not None and fault.rule.id == fault_id, (text, fault)
    made = decide(
        fault,
        Identity(cluster=cluster, instance_id=instance_id, source="kmsg"),
        first_seen=first_seen or datetime.now(UTC),
        gpu_reset=gpu_reset,
    )
    assert made is not None
    return made.to_record()


def instances(name: str, size: int, **launch: Any) -> list[str]:
    """An Auto Scaling group of ``size`` instances in moto; their ids."""
    return node_group(name, size, region=REGION, **launch)


TICK = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
"""What EventBridge's schedule hands the aftercare state machines."""


def finished(sfn: Any, execution_arn: str, timeout: float = 180) -> dict[str, Any]:
    """The execution once it ended; the deadline only bounds a broken run (an execution
    takes seconds on an idle machine, a minute or more on a busy one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
        if result["status"] != "RUNNING":
            return result
        time.sleep(0.1)
    raise TimeoutError(f"{execution_arn} still running after {timeout} s")


class Pipeline:
    """One cluster's deployed stack: its state machine and what it writes to."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.arn = deployment.outputs["StateMachineArn"]
        self.table = deployment.find("AWS::DynamoDB::Table", "RemediationLedger").ref
        self.inbox = Inbox(
            boto3.client("sns", region_name=REGION),
            boto3.client("sqs", region_name=REGION),
            deployment.outputs["TopicArn"],
            name=f"{deployment.stack_name}-inbox",
        )
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.dynamodb = boto3.client("dynamodb", region_name=REGION)

    @property
    def cleanup(self) -> str:
        """The cleanup state machine's ARN (``stacks.remediation.machines.cleanup``)."""
        return self.deployment.find(MACHINE, "RemediationAftercareCleanup").ref

    @property
    def reconcile(self) -> str:
        """The reconcile state machine's ARN (``stacks.remediation.machines.reconcile``)."""
        return self.deployment.find(MACHINE, "RemediationAftercareReconcile").ref

    @property
    def requests(self) -> str:
        """The label requests' state machine's ARN (``stacks.remediation.machines.requests``)."""
        return self.deployment.find(MACHINE, "RemediationAftercareRequests").ref

    def run_as_rule(self, machine: str, event: dict[str, Any]) -> dict[str, Any]:
        """``machine`` (an aftercare one) started with ``event`` as its rule would, ended."""
        started = self.sfn.start_execution(
            stateMachineArn=machine, name=secrets.token_hex(8), input=json.dumps(event)
        )
        return self.finish(started["executionArn"])

    def scheduled(self, machine: str, state: str) -> dict[str, Any]:
        """What ``state`` found in one run of ``machine`` on its schedule, which succeeded."""
        done = self.run_as_rule(machine, TICK)
        assert done["status"] == "SUCCEEDED", done
        (found,) = self.outputs(done["executionArn"], state)
        return dict(found)

    def told(self, subject: str, node: str) -> list[str]:
        """The texts of the cluster's mails with ``subject`` that name ``node``."""
        return [
            n.body["text"]
            for n in self.inbox.messages()
            if n.subject == subject and node in n.body.get("text", "")
        ]

    def hold_lock(self, instance: str, *, expires_in: int) -> None:
        """The node lock of another remediation of ``instance`` (``ledger.lock_item``)."""
        self.dynamodb.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": instance},
                "sk": {"S": "inflight"},
                "decision_id": {"S": f"{instance}-elsewhere"},
                "fault_id": {"S": "nvidia-xid-79"},
                "since": {"S": "2026-11-22T18:30:00Z"},
                "expires_at": {"N": str(int(time.time()) + expires_in)},
            },
        )

    def rule(self, prefix: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The EventBridge rule whose logical id starts with ``prefix``, and its targets, as
        moto holds them (it fires none: ``world.aws.resources``)."""
        events = boto3.client("events", region_name=REGION)
        name = self.deployment.find("AWS::Events::Rule", prefix).ref
        targets: list[dict[str, Any]] = events.list_targets_by_rule(Rule=name)["Targets"]
        return events.describe_rule(Name=name), targets

    def status_change(self, execution_arn: str, status: str) -> dict[str, Any]:
        """The ``Step Functions Execution Status Change`` event EventBridge delivers once the
        execution ended with ``status``: moto's Step Functions sends none."""
        ended = self.sfn.describe_execution(executionArn=execution_arn)
        detail = {
            "executionArn": execution_arn,
            "stateMachineArn": ended["stateMachineArn"],
            "name": ended["name"],
            "status": status,
            "startDate": int(ended["startDate"].timestamp() * 1000),
            "stopDate": int(ended["stopDate"].timestamp() * 1000),
            "input": ended["input"],
            "inputDetails": {"included": True},
            "output": None,
            "outputDetails": None,
            "error": "States.Timeout" if status == "TIMED_OUT" else None,
            "cause": None,
        }
        return {
            "version": "0",
            "id": secrets.token_hex(16),
            "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states",
            "account": execution_arn.split(":")[4],
            "time": iso(ended["stopDate"]),
            "region": REGION,
            "resources": [execution_arn],
            "detail": detail,
        }

    def start(self, record: dict[str, Any], *, recorded: bool = True) -> str:
        """Start ``record`` as its maker does: recorded first (``lambdas.recorded``) unless
        a person asks for it, or not ``recorded``, as anyone else who may start it would."""
        if recorded and recorder(record["source"]) is not None:
            record_start(self.dynamodb, self.table, record, starts_at=time.time())
        arn: str = self.sfn.start_execution(
            stateMachineArn=self.arn, name=record["decision_id"], input=json.dumps(record)
        )["executionArn"]
        return arn

    def finish(self, execution_arn: str, timeout: float = 180) -> dict[str, Any]:
        return finished(self.sfn, execution_arn, timeout)

    def run(self, record: dict[str, Any], timeout: float = 180) -> dict[str, Any]:
        return self.finish(self.start(record), timeout)

    def executions(self, instance_id: str) -> list[str]:
        """The executions started for the instance (by the classifier, say), oldest first."""
        listed = self.sfn.list_executions(stateMachineArn=self.arn)["executions"]
        found = [e for e in listed if e["name"].startswith(instance_id)]
        return [e["executionArn"] for e in sorted(found, key=lambda e: e["startDate"])]

    def outputs(self, execution_arn: str, state: str) -> list[dict[str, Any]]:
        """The output of each time the execution left ``state``, in order."""
        events = self.sfn.get_execution_history(executionArn=execution_arn)["events"]
        return [
            json.loads(e["stateExitedEventDetails"]["output"])
            for e in events
            if e["type"].endswith("StateExited") and e["stateExitedEventDetails"]["name"] == state
        ]

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        found = self.dynamodb.get_item(
            TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        ).get("Item")
        if found is None:
            return None
        return {name: next(iter(value.values())) for name, value in found.items()}

    def ledger(self, record: dict[str, Any]) -> dict[str, Any] | None:
        return self.item(record["instance_id"], f"decision#{record['decision_id']}")

    def messages(self, instance_id: str) -> list[dict[str, Any]]:
        """The SNS messages about the instance, as mailed: subject and JSON body."""
        return [{"subject": n.subject, **n.body} for n in self.inbox.about(instance_id)]


def metric_names(namespace: str, **dimensions: str) -> set[str]:
    """Metrics of ``namespace`` that carry (at least) these dimension values."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    found = cloudwatch.list_metrics(
        Namespace=namespace,
        Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()],
    )["Metrics"]
    return {m["MetricName"] for m in found}


def _last_hour(
    namespace: str, metric: str, dimensions: dict[str, str], period: int, statistics: list[str]
) -> list[dict[str, Any]]:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    now = time.time()
    found: list[dict[str, Any]] = cloudwatch.get_metric_statistics(
        Namespace=namespace,
        MetricName=metric,
        Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()],
        StartTime=datetime.fromtimestamp(now - 3600, UTC),
        EndTime=datetime.fromtimestamp(now + 60, UTC),
        Period=period,
        Statistics=statistics,
    )["Datapoints"]
    return found


def total(namespace: str, metric: str, **dimensions: str) -> float:
    """The sum of every value published for the metric with exactly these dimensions in the
    last hour."""
    return float(sum(p["Sum"] for p in _last_hour(namespace, metric, dimensions, 3700, ["Sum"])))


def datapoints(namespace: str, metric: str, **dimensions: str) -> list[float]:
    """Every value published for the metric with exactly these dimensions, as CloudWatch
    would chart them at one-second resolution."""
    stats = _last_hour(namespace, metric, dimensions, 1, ["Maximum", "SampleCount"])
    return [p["Maximum"] for p in sorted(stats, key=lambda p: p["Timestamp"])]
