"""The remediation state machine: one decision record in, a healed or recorded node out.

Flow (state names in quotes), JSONPath query language, native integrations everywhere
except the Kubernetes API (the kube Lambda) and two bits of arithmetic States Language
cannot do (the policy Lambda, lambdas/policy.py):

1. "Valid decision?" (every field of the contract) and "Ours?" (this cluster), then
   "Record decision" in the ledger, find the node group (Auto Scaling), read the last
   reboot for this fault, "Plan" (mode notify | monitor | act, escalation, breaker limit),
   publish the fault's metric.
2. notify (an application fault, nothing against the node): report only, no lock, no
   change to the node. Otherwise "Take node lock": one remediation per node; a second
   decision for a node in flight ends as "Duplicate" (and flags a recurrence if the node
   was already rebooted for the same fault).
3. monitor (recovery_mode None, dry_run, a group outside ``node_groups``): label and
   condition only. act: "Admit" through the breaker (a conditional update of the group's
   holder set), holding and polling while the group is at its limit; once a minute the
   hold also sweeps holders whose execution is gone, so the breaker cannot latch shut.
4. "Mark" (condition, label, taint, cordon), drain rounds until done, then reboot (watch
   for a new boot id, escalate to replace when none comes or the fault recurs) or replace
   (SetInstanceHealth Unhealthy, wait for termination, delete the Node).
5. Report: pipeline metrics, SNS, close the ledger, release the breaker slot and the lock.
   Any failure on the way is caught: the ledger says where it stopped, the slot and lock
   are released, SNS says so, and the execution ends in "Remediation failed".

Metrics (stacks/metrics.py; namespace NodeMedic, dimensions Cluster and NodeGroup):
``Remediations`` (plus ``Action`` and ``Outcome``) and ``RemediationSeconds`` per decision,
``BreakerHeld`` per hold, ``InRemediation`` (the group's breaker holders, a gauge published
at every admission and release) and ``FaultToActionSeconds`` (the fault's ``first_seen``
to the cordon); the fault's own catalog metric in its namespace.

Ledger items (partition ``pk``, sort ``sk``):
``<instance-id>`` / ``decision#<decision_id>``: one remediation, its state and timings;
``<instance-id>`` / ``inflight``: the node lock; ``<instance-id>`` / ``reboot#<fault_id>``:
the last reboot for a fault (escalation); ``group#<asg>`` / ``breaker``: the breaker's
holders, the instances in remediation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from aws_cdk import Duration, RemovalPolicy, Stack, aws_lambda
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from nodemedic.contracts import (
    BREAKER_METRIC,
    FAULT_TO_ACTION_METRIC,
    IN_REMEDIATION_METRIC,
    METRICS_NAMESPACE,
    REMEDIATION_SECONDS_METRIC,
    REMEDIATIONS_METRIC,
)
from nodemedic.remediate import ledger, policy
from nodemedic.remediate.decision import SCHEMA, Decision
from stacks.functions import PythonFunction
from stacks.guardrails import node_group_arns
from stacks.loggroups import log_group
from stacks.settings import ClusterSettings

_ROOT = Path(__file__).resolve().parent.parent
_NOW = sfn.JsonPath.state_entered_time
_CONDITIONAL = "DynamoDB.ConditionalCheckFailedException"
_TERMINATING = ("Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated")
_INSTANCE = "$.decision.instance_id"
Value = tasks.DynamoAttributeValue
_Task = TypeVar("_Task", bound=sfn.TaskStateBase | sfn.Map)


def _path(path: str) -> str:
    return sfn.JsonPath.string_at(path)


def _fmt(template: str, *args: str) -> str:
    """``States.Format``; arguments starting with ``$`` are paths, others literal text."""
    return sfn.JsonPath.format(template, *(_path(a) if a.startswith("$") else a for a in args))


def _s(path: str) -> tasks.DynamoAttributeValue:
    return Value.from_string(sfn.JsonPath.string_at(path))


def _n(path: str) -> tasks.DynamoAttributeValue:
    return Value.number_from_string(_fmt("{}", path))


def _json(path: str) -> tasks.DynamoAttributeValue:
    return Value.from_string(sfn.JsonPath.json_to_string(sfn.JsonPath.object_at(path)))


def _at() -> dict[str, Any]:
    return {"at": _NOW}


def _policy_code() -> aws_lambda.Code:
    """The policy modules only: the handler needs nothing outside the standard library."""
    keep = (
        "lambdas/__init__.py",
        "lambdas/policy/__init__.py",
        "lambdas/policy/handler.py",
        "nodemedic/__init__.py",
        "nodemedic/contracts.py",
        "nodemedic/remediate/__init__.py",
        "nodemedic/remediate/errors.py",
        "nodemedic/remediate/expressions.py",
        "nodemedic/remediate/ledger.py",
        "nodemedic/remediate/policy.py",
    )
    folders = ("lambdas", "lambdas/policy", "nodemedic", "nodemedic/remediate")
    return aws_lambda.Code.from_asset(
        str(_ROOT), exclude=["*", ".*", *(f"!{name}" for name in folders + keep)]
    )


class Remediation(Construct):
    """The ledger table, the policy function and the remediation state machine of one cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        kube_function: aws_lambda.IFunction,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, id)
        self.ledger = dynamodb.Table(
            self,
            "Ledger",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.policy = PythonFunction(
            self,
            "Policy",
            settings=settings,
            code=_policy_code(),
            handler="lambdas.policy.handler.handler",
            service="nodemedic-policy",
            description="remediation policy arithmetic",
            environment={},
            memory_size=128,
            timeout_seconds=10,
        )
        self.policy_function = self.policy.function
        timeout = policy.execution_timeout(
            breaker_hold=settings.breaker_hold,
            drain_timeout=settings.drain_timeout,
            reboot_timeout=settings.reboot_timeout,
            poll_seconds=settings.poll_seconds,
        )
        flow = _Flow(
            self,
            settings=settings,
            kube=kube_function,
            policy_function=self.policy_function,
            topic=topic,
            ledger=self.ledger,
            lock_seconds=timeout,
        )
        execution_logs = log_group(
            self, "ExecutionLogs", retention_days=settings.log_retention_days
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment=f"nodemedic: remediate one decision on cluster {settings.name}",
            definition_body=sfn.DefinitionBody.from_chainable(flow.start),
            timeout=Duration.seconds(timeout),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=execution_logs, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )


def _remediations(outcome: str) -> dict[str, Any]:
    """One ``Remediations`` datum, by the action planned and the ``outcome``."""
    return {
        "name": REMEDIATIONS_METRIC,
        "value": 1,
        "unit": "Count",
        "dimensions": [
            {"Name": "Action", "Value": sfn.JsonPath.string_at("$.plan.action")},
            {"Name": "Outcome", "Value": outcome},
        ],
    }


class _Flow:
    """Builds the states; holds what every state needs (settings, resources, the catch-all)."""

    def __init__(
        self,
        scope: Construct,
        *,
        settings: ClusterSettings,
        kube: aws_lambda.IFunction,
        policy_function: aws_lambda.IFunction,
        topic: sns.ITopic,
        ledger: dynamodb.ITable,
        lock_seconds: int,
    ) -> None:
        self.scope = scope
        self.settings = settings
        self.kube_function = kube
        self.policy_function = policy_function
        self.topic = topic
        self.ledger = ledger
        self.lock_seconds = lock_seconds
        self.poll = sfn.WaitTime.duration(Duration.seconds(settings.poll_seconds))
        self.reboot_rounds = policy.rounds(settings.reboot_timeout, settings.poll_seconds)
        """Rounds of the two waits ``reboot_timeout`` bounds: for a new boot id, and for an
        instance set Unhealthy to start terminating."""
        self.guarded: list[sfn.TaskStateBase | sfn.Map] = []
        self.failure = self._failure()
        report = self._report()
        self.start = self._begin(report)
        for task in self.guarded:
            task.add_catch(self.failure, result_path="$.error")

    # Building blocks -------------------------------------------------------------------

    def _guard(self, task: _Task) -> _Task:
        """Route the task's unexpected errors to the failure chain (added last, after any
        specific catch the task already has)."""
        self.guarded.append(task)
        return task

    def _record(
        self,
        id: str,
        *,
        state: str | None = None,
        values: Mapping[str, tasks.DynamoAttributeValue] | None = None,
        result_selector: Mapping[str, Any] | None = None,
        result_path: str = sfn.JsonPath.DISCARD,
    ) -> tasks.DynamoUpdateItem:
        """Update this decision's ledger item: ``state`` and any ``values`` by name."""
        fields: dict[str, tasks.DynamoAttributeValue] = {"updated_at": Value.from_string(_NOW)}
        if state is not None:
            fields["state"] = Value.from_string(state)
        fields.update(values or {})
        return tasks.DynamoUpdateItem(
            self.scope,
            id,
            table=self.ledger,
            key=self._record_key(),
            update_expression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
            expression_attribute_names={f"#{k}": k for k in fields},
            expression_attribute_values={f":{k}": v for k, v in fields.items()},
            result_selector=result_selector,
            result_path=result_path,
        )

    def _step(self, id: str, state: str) -> tasks.DynamoUpdateItem:
        """Enter a phase: the ledger's ``state`` and ``$.step`` say where a failure stopped."""
        return self._guard(
            self._record(
                id,
                state=state,
                result_selector={"name": state, "at": _NOW},
                result_path="$.step",
            )
        )

    def _record_key(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {"pk": _s(_INSTANCE), "sk": _s("$.keys.record")}

    def _lock_key(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {"pk": _s(_INSTANCE), "sk": Value.from_string("inflight")}

    def _breaker_key(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {
            "pk": Value.from_string(_fmt("group#{}", "$.group.name")),
            "sk": Value.from_string("breaker"),
        }

    def _kube(
        self,
        id: str,
        op: str,
        payload: Mapping[str, Any],
        *,
        result_path: str,
        timed: bool = False,
    ) -> tasks.LambdaInvoke:
        """One kube Lambda op (docs/contracts.md); ``timed`` keeps only when it ran."""
        task = tasks.LambdaInvoke(
            self.scope,
            id,
            lambda_function=self.kube_function,
            payload=sfn.TaskInput.from_object({"op": op, **payload}),
            payload_response_only=True,
            result_selector=_at() if timed else None,
            result_path=result_path,
        )
        # Ops are idempotent: one retry rides over an API server hiccup.
        task.add_retry(
            errors=[sfn.Errors.TASKS_FAILED],
            max_attempts=1,
            interval=Duration.seconds(self.settings.poll_seconds),
        )
        self._guard(task)
        return task

    def _aws(
        self,
        id: str,
        service: str,
        action: str,
        parameters: Mapping[str, Any],
        *,
        iam_resources: Sequence[str] = ("*",),
        result_selector: Mapping[str, Any] | None = None,
        result_path: str = sfn.JsonPath.DISCARD,
        guard: bool = True,
    ) -> tasks.CallAwsService:
        task = tasks.CallAwsService(
            self.scope,
            id,
            service=service,
            action=action,
            parameters=dict(parameters),
            iam_resources=list(iam_resources),
            result_selector=result_selector,
            result_path=result_path,
        )
        if guard:
            self._guard(task)
        return task

    def _metrics(
        self,
        id: str,
        namespace: str,
        metrics: Sequence[Mapping[str, Any]],
        *,
        guard: bool = True,
    ) -> tasks.CallAwsService:
        dimensions = [
            {"Name": "Cluster", "Value": sfn.JsonPath.string_at("$.decision.cluster")},
            {"Name": "NodeGroup", "Value": sfn.JsonPath.string_at("$.group.name")},
        ]
        return self._aws(
            id,
            "cloudwatch",
            "putMetricData",
            {
                "Namespace": namespace,
                "MetricData": [
                    {
                        "MetricName": m["name"],
                        "Value": m["value"],
                        "Unit": m["unit"],
                        "Dimensions": dimensions + list(m.get("dimensions", [])),
                    }
                    for m in metrics
                ],
            },
            guard=guard,
        )

    def _in_remediation(self, id: str, count: str, *, guard: bool = True) -> tasks.CallAwsService:
        """The gauge of the group's breaker holders (nodes in remediation), as it now is."""
        return self._metrics(
            id,
            METRICS_NAMESPACE,
            [
                {
                    "name": IN_REMEDIATION_METRIC,
                    "value": sfn.JsonPath.number_at(count),
                    "unit": "Count",
                }
            ],
            guard=guard,
        )

    def _elapsed(self, id: str, since: str, until: str, result_path: str) -> tasks.LambdaInvoke:
        """Seconds between two ISO times (policy Lambda: States Language has no date math)."""
        task = tasks.LambdaInvoke(
            self.scope,
            id,
            lambda_function=self.policy_function,
            payload=sfn.TaskInput.from_object({"op": "elapsed", "since": since, "until": until}),
            payload_response_only=True,
            result_path=result_path,
        )
        self._guard(task)
        return task

    def _fault_to_action(self) -> sfn.Chain:
        """FaultToActionSeconds: from the fault line's time to the cordon, how long a faulty
        node kept taking work (acting only: a monitored node is never cordoned)."""
        elapsed = self._elapsed(
            "Fault to action",
            _path("$.decision.first_seen"),
            _path("$.times.marked.at"),
            "$.fault_to_action",
        )
        metric = self._metrics(
            "Publish fault-to-action time",
            METRICS_NAMESPACE,
            [
                {
                    "name": FAULT_TO_ACTION_METRIC,
                    "value": sfn.JsonPath.number_at("$.fault_to_action.seconds"),
                    "unit": "Seconds",
                }
            ],
        )
        return elapsed.next(metric)

    def _notify(
        self, id: str, subject: str, message: Mapping[str, Any], *, guard: bool = True
    ) -> tasks.SnsPublish:
        """SNS: who, what and the evidence line, then the step's own ``message`` fields."""
        task = tasks.SnsPublish(
            self.scope,
            id,
            topic=self.topic,
            subject=subject,
            message=sfn.TaskInput.from_object(
                {
                    "decision_id": sfn.JsonPath.string_at("$.decision.decision_id"),
                    "cluster": sfn.JsonPath.string_at("$.decision.cluster"),
                    "node_group": sfn.JsonPath.string_at("$.group.name"),
                    "instance_id": sfn.JsonPath.string_at(_INSTANCE),
                    "node": sfn.JsonPath.string_at("$.node.node"),
                    "fault_id": sfn.JsonPath.string_at("$.decision.fault_id"),
                    "severity": sfn.JsonPath.string_at("$.decision.severity"),
                    "evidence_line": sfn.JsonPath.string_at("$.decision.evidence_line"),
                    "first_seen": sfn.JsonPath.string_at("$.decision.first_seen"),
                    "started_at": sfn.JsonPath.string_at("$.started_at"),
                    "actions": sfn.JsonPath.object_at("$.times"),
                    "execution": sfn.JsonPath.execution_id,
                    **message,
                }
            ),
            result_path=sfn.JsonPath.DISCARD,
        )
        if guard:
            self._guard(task)
        return task

    def _pass(self, id: str, result_path: str, **parameters: Any) -> sfn.Pass:
        return sfn.Pass(self.scope, id, parameters=parameters, result_path=result_path)

    def _counter(self, id: str, path: str, **keep: Any) -> sfn.Pass:
        """``path``.rounds + 1, keeping the loop's other fields."""
        return self._pass(
            id,
            path,
            rounds=sfn.JsonPath.math_add(sfn.JsonPath.number_at(f"{path}.rounds"), 1),
            **keep,
        )

    def _error(self, id: str, error: str, cause: str, *args: str) -> sfn.Pass:
        """A failure found by a Choice, shaped like a caught error."""
        return self._pass(
            id,
            "$.error",
            Error=error,
            Cause=_fmt(cause, *args) if args else cause,
        )

    def _outcome(self, id: str, outcome: str) -> sfn.Pass:
        return self._pass(id, "$.outcome", name=outcome)

    # The flow --------------------------------------------------------------------------

    def _begin(self, report: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        begin = sfn.Pass(
            s,
            "Begin",
            parameters={
                "decision": sfn.JsonPath.entire_payload,
                "started_at": _NOW,
                "keys": {
                    "record": _fmt("decision#{}", "$.decision_id"),
                    "reboot": _fmt("reboot#{}", "$.fault_id"),
                    "instance_ids": sfn.JsonPath.array(_path("$.instance_id")),
                },
                "group": {"name": policy.NO_GROUP, "size": 0, "found": False},
                "node": {"node": "", "boot_id": ""},
                "step": {"name": "planning"},
                # Until "Plan" replaces it: a failure before it still has an action to report.
                "plan": {"action": _path("$.action")},
                "hold": {"held": False, "rounds": 0, "sweep_at": 1},
                "escalation": {"escalated": False, "reason": None},
                "times": {},
            },
        )
        # Checked before anything reads the input: a missing field would otherwise stop
        # the execution with an uncatchable States.Runtime error halfway through.
        complete = sfn.Condition.and_(
            *[sfn.Condition.is_present(f"$.{f.name}") for f in dataclasses.fields(Decision)],
            sfn.Condition.is_numeric("$.schema"),
            sfn.Condition.number_equals("$.schema", SCHEMA),
            sfn.Condition.is_numeric("$.count"),
        )
        invalid = sfn.Fail(
            s,
            "Invalid decision",
            error="InvalidDecision",
            cause="the input is not a schema 1 decision record with every field of "
            "docs/contracts.md",
        )
        wrong = sfn.Fail(
            s,
            "Not this cluster",
            error="WrongCluster",
            cause=f"this state machine remediates decisions of cluster {self.settings.name} only",
        )
        ours = (
            sfn.Choice(s, "Ours?")
            .when(sfn.Condition.string_equals("$.cluster", self.settings.name), begin)
            .otherwise(wrong)
        )
        check = sfn.Choice(s, "Valid decision?").when(complete, ours).otherwise(invalid)
        record = self._guard(
            tasks.DynamoPutItem(
                s,
                "Record decision",
                table=self.ledger,
                item={
                    **self._record_key(),
                    **{
                        name: _s(f"$.decision.{name}")
                        for name in (
                            "decision_id",
                            "cluster",
                            "instance_id",
                            "fault_id",
                            "component",
                            "action",
                            "severity",
                            "condition",
                            "metric",
                            "evidence_line",
                            "source",
                            "first_seen",
                        )
                    },
                    "count": _n("$.decision.count"),
                    "state": Value.from_string("open"),
                    "started_at": _s("$.started_at"),
                    "updated_at": Value.from_string(_NOW),
                    "execution": Value.from_string(sfn.JsonPath.execution_id),
                },
                result_path=sfn.JsonPath.DISCARD,
            )
        )
        find_group = self._aws(
            "Find node group",
            "autoscaling",
            "describeAutoScalingInstances",
            {"InstanceIds": sfn.JsonPath.list_at("$.keys.instance_ids")},
            result_selector={
                "groups": sfn.JsonPath.list_at("$.AutoScalingInstances[*].AutoScalingGroupName")
            },
            result_path="$.asg",
        )
        describe_group = self._aws(
            "Describe node group",
            "autoscaling",
            "describeAutoScalingGroups",
            {"AutoScalingGroupNames": sfn.JsonPath.list_at("$.asg.groups")},
            # Only the two numbers: a group's instance list can be large.
            result_selector={
                "name": sfn.JsonPath.array_get_item(
                    sfn.JsonPath.list_at("$.AutoScalingGroups[*].AutoScalingGroupName"), 0
                ),
                "size": sfn.JsonPath.array_get_item(
                    sfn.JsonPath.list_at("$.AutoScalingGroups[*].DesiredCapacity"), 0
                ),
                "found": True,
            },
            result_path="$.group",
        )
        last_reboot = self._guard(
            tasks.DynamoGetItem(
                s,
                "Read last reboot",
                table=self.ledger,
                key={"pk": _s(_INSTANCE), "sk": _s("$.keys.reboot")},
                consistent_read=True,
                result_path="$.last_reboot",
            )
        )
        st = self.settings
        plan = tasks.LambdaInvoke(
            s,
            "Plan",
            lambda_function=self.policy_function,
            payload=sfn.TaskInput.from_object(
                {
                    "op": "plan",
                    "decision": sfn.JsonPath.object_at("$.decision"),
                    "group": sfn.JsonPath.object_at("$.group"),
                    "last_reboot": sfn.JsonPath.object_at("$.last_reboot"),
                    "now": _NOW,
                    "policy": policy.Policy(
                        recovery_mode=st.recovery_mode,
                        dry_run=st.dry_run,
                        node_groups=st.node_groups,
                        max_unhealthy_percent=st.max_unhealthy_percent,
                        max_parallel=st.max_parallel,
                        escalation_window=st.escalation_window,
                        lock_seconds=self.lock_seconds,
                    ).to_mapping(),
                }
            ),
            payload_response_only=True,
            result_path="$.plan",
        )
        self._guard(plan)
        fault_metric = self._metrics(
            "Publish fault metric",
            sfn.JsonPath.string_at("$.decision.metric_namespace"),
            [{"name": sfn.JsonPath.string_at("$.decision.metric"), "value": 1, "unit": "Count"}],
        )
        begin.next(record)
        record.next(find_group).next(
            sfn.Choice(s, "In a node group?")
            .when(
                sfn.Condition.is_present("$.asg.groups[0]"),
                describe_group.next(last_reboot),
            )
            .otherwise(last_reboot)
        )
        last_reboot.next(plan).next(fault_metric).next(
            sfn.Choice(s, "Notify only?")
            .when(
                sfn.Condition.string_equals("$.plan.mode", "notify"),
                self._outcome("Notified", "notified").next(report),
            )
            .otherwise(self._lock(report))
        )
        return check

    def _lock(self, report: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        lock = tasks.DynamoPutItem(
            s,
            "Take node lock",
            table=self.ledger,
            item={
                **self._lock_key(),
                "decision_id": _s("$.decision.decision_id"),
                "fault_id": _s("$.decision.fault_id"),
                "since": Value.from_string(_NOW),
                "expires_at": _n("$.plan.lock_expires_epoch"),
            },
            condition_expression="attribute_not_exists(pk) OR expires_at < :now",
            expression_attribute_values={":now": _n("$.plan.now_epoch")},
            result_selector=_at(),
            result_path="$.lock",
        )
        flag = tasks.DynamoUpdateItem(
            s,
            "Flag recurrence",
            table=self.ledger,
            key=self._lock_key(),
            update_expression="SET recurred_at = :now, recurred_by = :me",
            condition_expression=(
                "fault_id = :fault AND attribute_exists(rebooted_at) AND decision_id <> :me"
            ),
            expression_attribute_values={
                ":now": Value.from_string(_NOW),
                ":me": _s("$.decision.decision_id"),
                ":fault": _s("$.decision.fault_id"),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        duplicate = self._guard(
            self._record(
                "Record duplicate",
                state="duplicate",
                values={
                    "outcome": Value.from_string("duplicate"),
                    "ended_at": Value.from_string(_NOW),
                },
            )
        )
        done = sfn.Succeed(s, "Duplicate", comment="another remediation of this node is in flight")
        # The node already has a remediation in flight: this decision joins nothing. If that
        # one rebooted the node for the same fault, the fault came back: tell it to escalate.
        lock.add_catch(flag, errors=[_CONDITIONAL], result_path=sfn.JsonPath.DISCARD)
        flag.add_catch(duplicate, errors=[sfn.Errors.ALL], result_path=sfn.JsonPath.DISCARD)
        self._guard(lock)
        flag.next(duplicate).next(done)
        locate = self._kube(
            "Locate node", "locate", {"instance_id": _path(_INSTANCE)}, result_path="$.node"
        )
        missing = self._error(
            "Node not found",
            "NodeNotFound",
            "no Kubernetes node has providerID aws:///*/{}",
            _INSTANCE,
        )
        monitor = self._step("Start monitoring", "monitoring")
        monitor.next(self._mark("Mark (monitor only)", cordon=False)).next(
            self._pass("Monitored", "$.outcome", name=sfn.JsonPath.string_at("$.plan.outcome"))
        ).next(report)
        lock.next(locate).next(
            sfn.Choice(s, "Node found?")
            .when(sfn.Condition.is_null("$.node.node"), missing.next(self.failure))
            .when(sfn.Condition.string_equals("$.plan.mode", "monitor"), monitor)
            .otherwise(self._admit(report))
        )
        return lock

    def _admit(self, report: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        st = self.settings
        admit = tasks.DynamoUpdateItem(
            s,
            "Admit",
            table=self.ledger,
            key=self._breaker_key(),
            update_expression="ADD holders :me SET updated_at = :now, #limit = :limit",
            # Idempotent: a retried admission of the same instance succeeds again.
            condition_expression=(
                "attribute_not_exists(holders) OR size(holders) < :limit "
                "OR contains(holders, :instance)"
            ),
            expression_attribute_names={"#limit": "limit"},
            expression_attribute_values={
                ":me": Value.from_string_set(sfn.JsonPath.list_at("$.keys.instance_ids")),
                ":instance": _s(_INSTANCE),
                ":now": Value.from_string(_NOW),
                ":limit": _n("$.plan.limit"),
            },
            return_values=tasks.DynamoReturnValues.ALL_NEW,
            result_selector={
                **_at(),
                "holders": sfn.JsonPath.array_length(
                    sfn.JsonPath.list_at("$.Attributes.holders.SS")
                ),
            },
            result_path="$.slot",
        )
        held_before = sfn.Choice(s, "Held before?")
        admit.add_catch(held_before, errors=[_CONDITIONAL], result_path=sfn.JsonPath.DISCARD)
        self._guard(admit)
        hold_rounds = policy.rounds(st.breaker_hold, st.poll_seconds)
        expired = sfn.Choice(s, "Hold expired?")
        held = (
            self._guard(self._record("Record held", state="held"))
            .next(
                self._notify(
                    "Notify held",
                    _fmt("nodemedic held: {}", _INSTANCE),
                    {
                        "outcome": "held",
                        "action": sfn.JsonPath.string_at("$.plan.action"),
                        "summary": _fmt(
                            "breaker open: {} of the {} nodes of group {} are in remediation "
                            "(max_parallel {}, max_unhealthy_percent {}); this decision "
                            "waits for a slot up to {} s",
                            "$.plan.limit",
                            "$.group.size",
                            "$.group.name",
                            str(st.max_parallel),
                            str(st.max_unhealthy_percent),
                            str(st.breaker_hold),
                        ),
                    },
                )
            )
            .next(
                self._metrics(
                    "Publish held metric",
                    METRICS_NAMESPACE,
                    [{"name": BREAKER_METRIC, "value": 1, "unit": "Count"}],
                )
            )
            .next(expired)
        )
        held_before.when(sfn.Condition.boolean_equals("$.hold.held", True), expired).otherwise(held)
        hold_wait = sfn.Wait(s, "Hold", time=self.poll)
        expired.when(
            sfn.Condition.number_greater_than_equals("$.hold.rounds", hold_rounds),
            self._outcome("Held too long", "held").next(report),
        ).otherwise(hold_wait)
        hold_wait.next(
            self._counter(
                "Count hold",
                "$.hold",
                held=True,
                sweep_at=sfn.JsonPath.number_at("$.hold.sweep_at"),
            )
        ).next(
            sfn.Choice(s, "Sweep due?")
            .when(
                sfn.Condition.number_greater_than_equals_json_path(
                    "$.hold.rounds", "$.hold.sweep_at"
                ),
                self._sweep(admit),
            )
            .otherwise(admit)
        )
        admit.next(self._in_remediation("Publish nodes in remediation", "$.slot.holders")).next(
            self._act(report)
        )
        return admit

    def _sweep(self, admit: sfn.IChainable) -> sfn.IChainable:
        """Drop holders whose remediation is gone, so a stopped execution cannot keep its
        slot (and the breaker shut) forever.

        A live holder always holds its node lock: the slot is taken after the lock and
        given back before it. So a holder whose lock is missing or expired is stale; the
        transaction removes it only while that is true.
        """
        s = self.scope
        read = self._guard(
            tasks.DynamoGetItem(
                s,
                "Read breaker",
                table=self.ledger,
                key=self._breaker_key(),
                consistent_read=True,
                result_path="$.breaker",
            )
        )
        holder = "$.holder"
        remove = tasks.CallAwsService(
            s,
            "Remove stale holder",
            service="dynamodb",
            action="transactWriteItems",
            iam_action="dynamodb:ConditionCheckItem",
            iam_resources=[self.ledger.table_arn],
            additional_iam_statements=[
                iam.PolicyStatement(
                    actions=["dynamodb:UpdateItem"], resources=[self.ledger.table_arn]
                )
            ],
            parameters={
                "TransactItems": [
                    {
                        "ConditionCheck": {
                            "TableName": self.ledger.table_name,
                            "Key": {"pk": {"S": _path(holder)}, "sk": {"S": "inflight"}},
                            "ConditionExpression": "attribute_not_exists(pk) OR expires_at < :now",
                            "ExpressionAttributeValues": {":now": {"N": _fmt("{}", "$.now")}},
                        }
                    },
                    {
                        "Update": {
                            "TableName": self.ledger.table_name,
                            "Key": {
                                "pk": {"S": _fmt("group#{}", "$.group")},
                                "sk": {"S": "breaker"},
                            },
                            "UpdateExpression": "DELETE holders :holder",
                            "ExpressionAttributeValues": {
                                ":holder": {"SS": sfn.JsonPath.array(_path(holder))}
                            },
                        }
                    },
                ]
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        # A live holder makes the transaction fail: nothing to do for it.
        remove.add_catch(sfn.Pass(s, "Holder is live"), result_path=sfn.JsonPath.DISCARD)
        sweep = sfn.Map(
            s,
            "Sweep stale holders",
            items_path="$.breaker.Item.holders.SS",
            item_selector={
                "holder": sfn.JsonPath.string_at("$$.Map.Item.Value"),
                "group": _path("$.group.name"),
                "now": sfn.JsonPath.number_at("$.plan.now_epoch"),
            },
            max_concurrency=1,
            result_path=sfn.JsonPath.DISCARD,
        ).item_processor(remove)
        self._guard(sweep)
        swept = self._pass(
            "Next sweep",
            "$.hold",
            held=True,
            rounds=sfn.JsonPath.number_at("$.hold.rounds"),
            sweep_at=sfn.JsonPath.math_add(
                sfn.JsonPath.number_at("$.hold.rounds"),
                policy.rounds(ledger.SWEEP_SECONDS, self.settings.poll_seconds),
            ),
        )
        swept.next(admit)
        read.next(
            sfn.Choice(s, "Any holders?")
            .when(sfn.Condition.is_present("$.breaker.Item.holders.SS"), sweep.next(swept))
            .otherwise(swept)
        )
        return read

    def _mark(
        self, id: str, *, cordon: bool, health_status: str | None = None, when: str = "marked"
    ) -> Any:
        """kube ``mark``: condition and label always; taint and cordon when acting."""
        return self._kube(
            id,
            "mark",
            {
                "node": _path("$.node.node"),
                "fault_id": _path("$.decision.fault_id"),
                "condition": _path("$.decision.condition"),
                "condition_status": _path("$.decision.condition_status"),
                "reason": _path("$.decision.metric"),
                "message": _path("$.decision.evidence_line"),
                "health_status": health_status or _path("$.plan.health_status"),
                "cordon": cordon,
                "taint": cordon,
            },
            result_path=f"$.times.{when}",
            timed=True,
        )

    def _act(self, report: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        st = self.settings
        start = self._step("Start marking", "marking")
        drain_round = self._kube(
            "Drain",
            "drain",
            {
                "node": _path("$.node.node"),
                "started_at": _path("$.drain.started_at"),
                "timeout_seconds": st.drain_timeout,
                "settle_seconds": policy.drain_settle(st.poll_seconds),
            },
            result_path="$.drained",
        )
        save_pods = self._guard(
            self._record("Record pods", values={"pods": _json("$.drained.pods")})
        )
        drain_done = sfn.Choice(s, "Drained?")
        drain_wait = sfn.Wait(s, "Wait for drain", time=sfn.WaitTime.seconds_path("$.drain.wait"))
        keep_drain = {
            "started_at": sfn.JsonPath.string_at("$.drain.started_at"),
            "wait": sfn.JsonPath.number_at("$.drain.wait"),
        }
        backoff = self._pass(
            "Back off",
            "$.drain",
            started_at=sfn.JsonPath.string_at("$.drain.started_at"),
            rounds=sfn.JsonPath.number_at("$.drain.rounds"),
            wait=sfn.JsonPath.math_add(
                sfn.JsonPath.number_at("$.drain.wait"), sfn.JsonPath.number_at("$.drain.wait")
            ),
        )
        act = sfn.Choice(s, "Reboot or replace?")
        drained = self._pass("Drained", "$.times.drained", at=_NOW).next(act)
        drain_done.when(sfn.Condition.boolean_equals("$.drained.done", True), drained).when(
            sfn.Condition.number_greater_than_equals(
                "$.drain.rounds", policy.drain_rounds(st.drain_timeout, st.poll_seconds)
            ),
            self._error(
                "Drain stuck",
                "DrainTimeout",
                "pods still on node {} after the drain rounds",
                "$.node.node",
            ).next(self.failure),
        ).when(
            sfn.Condition.and_(
                sfn.Condition.is_present("$.drained.blocked[0]"),
                sfn.Condition.number_less_than(
                    "$.drain.wait", policy.max_drain_wait(st.poll_seconds)
                ),
            ),
            backoff.next(drain_wait),
        ).otherwise(drain_wait)
        drain_wait.next(self._counter("Count drain", "$.drain", **keep_drain)).next(drain_round)
        (
            start.next(self._mark("Mark", cordon=True))
            .next(self._fault_to_action())
            .next(self._step("Start draining", "draining"))
            .next(
                self._pass(
                    "Begin drain", "$.drain", started_at=_NOW, rounds=0, wait=st.poll_seconds
                )
            )
            .next(drain_round)
            .next(
                sfn.Choice(s, "First round?")
                .when(sfn.Condition.number_equals("$.drain.rounds", 0), save_pods.next(drain_done))
                .otherwise(drain_done)
            )
        )
        replace = self._replace(report)
        act.when(
            sfn.Condition.string_equals("$.plan.action", "reboot"), self._reboot(report, replace)
        )
        act.otherwise(replace)
        return start

    def _reboot(self, report: sfn.IChainable, replace: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        st = self.settings
        marker = self._guard(
            tasks.DynamoPutItem(
                s,
                "Record reboot",
                table=self.ledger,
                item={
                    "pk": _s(_INSTANCE),
                    "sk": _s("$.keys.reboot"),
                    "at": Value.from_string(_NOW),
                    "decision_id": _s("$.decision.decision_id"),
                },
                result_path=sfn.JsonPath.DISCARD,
            )
        )
        lock_rebooted = self._guard(
            tasks.DynamoUpdateItem(
                s,
                "Note reboot on lock",
                table=self.ledger,
                key=self._lock_key(),
                update_expression="SET rebooted_at = :now",
                expression_attribute_values={":now": Value.from_string(_NOW)},
                result_path=sfn.JsonPath.DISCARD,
            )
        )
        reboot = self._aws(
            "Reboot instance",
            "ec2",
            "rebootInstances",
            {"InstanceIds": sfn.JsonPath.list_at("$.keys.instance_ids")},
            iam_resources=[
                Stack.of(s).format_arn(service="ec2", resource="instance", resource_name="*")
            ],
            result_selector=_at(),
            result_path="$.times.rebooted",
        )
        watch_wait = sfn.Wait(s, "Wait for reboot", time=self.poll)
        status = self._kube(
            "Node status",
            "node_status",
            {"node": _path("$.node.node"), "boot_id": _path("$.node.boot_id")},
            result_path="$.status",
        )
        escalate = self._escalate(replace)
        settle = sfn.Wait(s, "Settle", time=self.poll)
        recurrence = self._guard(
            tasks.DynamoGetItem(
                s,
                "Read recurrence",
                table=self.ledger,
                key=self._lock_key(),
                consistent_read=True,
                result_path="$.lock_item",
            )
        )
        clear = self._kube(
            "Clear",
            "clear",
            {
                "node": _path("$.node.node"),
                "fault_id": _path("$.decision.fault_id"),
                "condition": _path("$.decision.condition"),
            },
            result_path="$.times.cleared",
            timed=True,
        )
        start = self._step("Start rebooting", "rebooting")
        (
            start.next(marker)
            .next(lock_rebooted)
            .next(reboot)
            .next(self._pass("Begin watch", "$.watch", rounds=0))
            .next(watch_wait)
            .next(status)
            .next(
                sfn.Choice(s, "Rebooted?")
                .when(sfn.Condition.boolean_equals("$.status.rebooted", True), settle)
                .when(
                    sfn.Condition.number_greater_than_equals("$.watch.rounds", self.reboot_rounds),
                    self._pass(
                        "No new boot id",
                        "$.escalation",
                        escalated=True,
                        reason=f"no new boot id within reboot_timeout ({st.reboot_timeout} s)",
                    ).next(escalate),
                )
                .otherwise(self._counter("Count watch", "$.watch").next(watch_wait))
            )
        )
        settle.next(recurrence).next(
            sfn.Choice(s, "Fault recurred?")
            .when(
                sfn.Condition.is_present("$.lock_item.Item.recurred_at"),
                self._pass(
                    "Recurred",
                    "$.escalation",
                    escalated=True,
                    reason="the fault recurred after the reboot",
                ).next(escalate),
            )
            .otherwise(clear)
        )
        clear.next(self._outcome("Rebooted", "rebooted")).next(report)
        return start

    def _escalate(self, replace: sfn.IChainable) -> sfn.IChainable:
        record = self._guard(
            self._record(
                "Record escalation",
                values={
                    "escalated": Value.from_boolean(True),
                    "escalation": _s("$.escalation.reason"),
                },
            )
        )
        record.next(
            self._mark(
                "Mark for replacement",
                cordon=True,
                health_status=policy.REPLACEMENT_STATUS,
                when="marked_for_replacement",
            )
        ).next(replace)
        return record

    def _replace(self, report: sfn.IChainable) -> sfn.IChainable:
        s = self.scope
        st = self.settings
        # With no node group configured, stacks/guardrails.py denies every group.
        groups = node_group_arns(Stack.of(s), st.node_groups) or ["*"]
        unhealthy = self._aws(
            "Set instance unhealthy",
            "autoscaling",
            "setInstanceHealth",
            {
                "InstanceId": sfn.JsonPath.string_at(_INSTANCE),
                "HealthStatus": "Unhealthy",
                "ShouldRespectGracePeriod": False,
            },
            iam_resources=groups,
            result_selector=_at(),
            result_path="$.times.replaced",
        )
        check = self._aws(
            "Check termination",
            "autoscaling",
            "describeAutoScalingInstances",
            {"InstanceIds": sfn.JsonPath.list_at("$.keys.instance_ids")},
            result_selector={
                "states": sfn.JsonPath.list_at("$.AutoScalingInstances[*].LifecycleState")
            },
            result_path="$.lifecycle",
        )
        term_wait = sfn.Wait(s, "Wait for termination", time=self.poll)
        delete = self._kube(
            "Delete node",
            "delete_node",
            {"node": _path("$.node.node")},
            result_path="$.times.deleted",
            timed=True,
        )
        gone = sfn.Condition.or_(
            sfn.Condition.is_not_present("$.lifecycle.states[0]"),
            *[sfn.Condition.string_equals("$.lifecycle.states[0]", t) for t in _TERMINATING],
        )
        start = self._step("Start replacing", "replacing")
        (
            start.next(unhealthy)
            .next(self._pass("Begin termination watch", "$.term", rounds=0))
            .next(check)
            .next(
                sfn.Choice(s, "Terminating?")
                .when(gone, delete)
                .when(
                    sfn.Condition.number_greater_than_equals("$.term.rounds", self.reboot_rounds),
                    self._error(
                        "Not terminated",
                        "TerminationTimeout",
                        "instance {} was not terminating within reboot_timeout",
                        _INSTANCE,
                    ).next(self.failure),
                )
                .otherwise(term_wait)
            )
        )
        term_wait.next(self._counter("Count termination", "$.term")).next(check)
        delete.next(self._outcome("Replaced", "replaced")).next(report)
        return start

    # Endings ---------------------------------------------------------------------------

    def _releases(self, prefix: str, then: sfn.IChainable, *, best_effort: bool) -> sfn.IChainable:
        """Give back the breaker slot and the node lock, if this execution holds them."""
        s = self.scope
        slot = tasks.DynamoUpdateItem(
            s,
            f"{prefix}release slot",
            table=self.ledger,
            key=self._breaker_key(),
            update_expression="DELETE holders :me SET updated_at = :now",
            expression_attribute_values={
                ":me": Value.from_string_set(sfn.JsonPath.list_at("$.keys.instance_ids")),
                ":now": Value.from_string(_NOW),
            },
            return_values=tasks.DynamoReturnValues.ALL_NEW,
            result_path="$.released",
        )
        # DynamoDB drops a set that becomes empty: no holders left is no attribute.
        gauge = self._in_remediation(
            f"{prefix}publish nodes in remediation", "$.released.count", guard=not best_effort
        )
        left = (
            sfn.Choice(s, f"{prefix}holders left?")
            .when(
                sfn.Condition.is_present("$.released.Attributes.holders.SS"),
                self._pass(
                    f"{prefix}count holders",
                    "$.released",
                    count=sfn.JsonPath.array_length(
                        sfn.JsonPath.list_at("$.released.Attributes.holders.SS")
                    ),
                ).next(gauge),
            )
            .otherwise(self._pass(f"{prefix}no holders", "$.released", count=0).next(gauge))
        )
        lock = tasks.DynamoDeleteItem(
            s,
            f"{prefix}release lock",
            table=self.ledger,
            key=self._lock_key(),
            condition_expression="decision_id = :me",
            expression_attribute_values={":me": _s("$.decision.decision_id")},
            result_path=sfn.JsonPath.DISCARD,
        )
        lock_choice = (
            sfn.Choice(s, f"{prefix}holds lock?")
            .when(sfn.Condition.is_present("$.lock"), lock)
            .otherwise(then)
        )
        slot.next(left)
        gauge.next(lock_choice)
        lock.next(then)
        if best_effort:
            slot.add_catch(lock_choice, result_path="$.release_error")
            gauge.add_catch(lock_choice, result_path="$.release_error")
            lock.add_catch(then, result_path="$.release_error")
        else:
            self._guard(slot)
            self._guard(lock)
        return (
            sfn.Choice(s, f"{prefix}holds slot?")
            .when(sfn.Condition.is_present("$.slot"), slot)
            .otherwise(lock_choice)
        )

    def _report(self) -> sfn.IChainable:
        s = self.scope
        elapsed = self._elapsed("Elapsed", _path("$.started_at"), _NOW, "$.elapsed")
        outcome = sfn.JsonPath.string_at("$.outcome.name")
        metrics = self._metrics(
            "Publish outcome metrics",
            METRICS_NAMESPACE,
            [
                {
                    "name": REMEDIATION_SECONDS_METRIC,
                    "value": sfn.JsonPath.number_at("$.elapsed.seconds"),
                    "unit": "Seconds",
                },
                _remediations(outcome),
            ],
        )
        notify = self._notify(
            "Notify outcome",
            _fmt("nodemedic {}: {}", "$.outcome.name", _INSTANCE),
            {
                "outcome": outcome,
                "action": sfn.JsonPath.string_at("$.plan.action"),
                # No node name: a notify-only decision never looks the node up (the
                # message's "node" field has it when known).
                "summary": _fmt(
                    "{}: {} on {} (group {}) after {} s; {}",
                    "$.outcome.name",
                    "$.decision.fault_id",
                    _INSTANCE,
                    "$.group.name",
                    "$.elapsed.seconds",
                    "$.plan.reason",
                ),
                "reason": sfn.JsonPath.string_at("$.plan.reason"),
                "escalation": sfn.JsonPath.object_at("$.escalation"),
                "seconds": sfn.JsonPath.number_at("$.elapsed.seconds"),
            },
        )
        close = self._guard(
            self._record(
                "Close ledger",
                state="closed",
                values={
                    "outcome": _s("$.outcome.name"),
                    "reason": _s("$.plan.reason"),
                    "node": _s("$.node.node"),
                    "node_group": _s("$.group.name"),
                    "actions": _json("$.times"),
                    "seconds": _n("$.elapsed.seconds"),
                    "ended_at": Value.from_string(_NOW),
                },
            )
        )
        done = sfn.Succeed(s, "Done")
        elapsed.next(metrics).next(notify).next(close).next(
            self._releases("Finally ", done, best_effort=False)
        )
        return elapsed

    def _failure(self) -> sfn.IChainable:
        s = self.scope
        record = self._record(
            "Record failure",
            state="failed",
            values={
                "failed_step": _s("$.step.name"),
                "error": _json("$.error"),
                "ended_at": Value.from_string(_NOW),
            },
        )
        notify = self._notify(
            "Notify failure",
            _fmt("nodemedic failed: {}", _INSTANCE),
            {
                "outcome": "failed",
                "summary": _fmt(
                    "remediation of {} ({}) stopped at {}: {}",
                    _INSTANCE,
                    "$.decision.fault_id",
                    "$.step.name",
                    "$.error.Error",
                ),
                "stopped_at": sfn.JsonPath.string_at("$.step.name"),
                "error": sfn.JsonPath.object_at("$.error"),
            },
            guard=False,
        )
        metric = self._metrics(
            "Publish failure metric",
            METRICS_NAMESPACE,
            [_remediations("failed")],
            guard=False,
        )
        fail = sfn.Fail(
            s,
            "Remediation failed",
            error="RemediationFailed",
            cause="a remediation step failed; the ledger item and the SNS message say which",
        )
        releases = self._releases("Failed: ", notify, best_effort=True)
        # Every step of the failure chain is best effort: the next one still runs.
        record.add_catch(releases, result_path="$.record_error")
        notify.add_catch(metric, result_path="$.notify_error")
        metric.add_catch(fail, result_path="$.metric_error")
        record.next(releases)
        notify.next(metric).next(fail)
        return record
