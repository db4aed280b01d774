"""What every phase of the flow builds with: the resources, the settings, the catch-all.

A phase is a function of a ``Flow`` and the states it continues to; it builds its states
with the builders here, guarding each task that may fail unexpectedly. ``catch_all`` then
routes every guarded task's errors to the failure phase, after the specific catches the
task already has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from aws_cdk import Duration, aws_lambda
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from nodemedic.contracts.kube import KUBE_UNAVAILABLE
from nodemedic.contracts.ledger import STEP_AT_PREFIX
from nodemedic.remediate import ledger, policy
from nodemedic.remediate.expressions import Condition, Update
from nodemedic.settings import ClusterSettings
from stacks.remediation.kit import state
from stacks.remediation.kit.render import (
    NOW,
    Value,
    dynamo_now,
    dynamo_text,
    entered_at,
    expression_values,
    formatted,
    record_key,
)
from stacks.unscoped import unscoped

_Task = TypeVar("_Task", bound=sfn.TaskStateBase | sfn.Map)
CONDITIONAL_CHECK_FAILED = "DynamoDB.ConditionalCheckFailedException"

REFUSED_ATTEMPTS = 6
REFUSED_MAX_POLLS = 8
"""A refused kube op is tried again up to six times, waiting up to 1, 2, 4, 8, 8, 8 polls:
about eight minutes at the worst with the default 15 s poll, long enough for a control plane
to come back from an upgrade's restart or a webhook's pod to be rescheduled."""


class Flow:
    """The scope the states live in, what they call and the tasks the catch-all guards."""

    def __init__(
        self,
        scope: Construct,
        *,
        settings: ClusterSettings,
        kube: aws_lambda.IFunction,
        policy_function: aws_lambda.IFunction,
        topic: sns.ITopic,
        ledger_table: dynamodb.ITable,
        lock_seconds: int,
    ) -> None:
        self.scope = scope
        self.settings = settings
        self.kube_function = kube
        self.policy_function = policy_function
        self.topic = topic
        self.ledger = ledger_table
        self.lock_seconds = lock_seconds
        self.poll = sfn.WaitTime.duration(Duration.seconds(settings.poll_seconds))
        self.reboot_rounds = policy.rounds(settings.reboot_timeout, settings.poll_seconds)
        """Rounds of the two waits ``reboot_timeout`` bounds: for a new boot id, and for an
        instance set Unhealthy to start terminating."""
        self._guarded: list[sfn.TaskStateBase | sfn.Map] = []

    def guard(self, task: _Task) -> _Task:
        """Route the task's unexpected errors to the failure phase (see ``catch_all``)."""
        self._guarded.append(task)
        return task

    def catch_all(self, failure: sfn.IChainable) -> None:
        """Add the failure phase as every guarded task's last catch."""
        for task in self._guarded:
            task.add_catch(failure, result_path=state.ERROR)

    # Tasks --------------------------------------------------------------------------------

    def read(
        self, id: str, key: Mapping[str, Value], result_path: str, *, guard: bool = True
    ) -> tasks.DynamoGetItem:
        """A consistent read of one ledger item: the GetItem result at ``result_path``."""
        task = tasks.DynamoGetItem(
            self.scope,
            id,
            table=self.ledger,
            key=dict(key),
            consistent_read=True,
            result_path=result_path,
        )
        return self.guard(task) if guard else task

    def write(
        self,
        id: str,
        key: Mapping[str, Value],
        change: Update,
        values: Mapping[str, Value],
        *,
        condition: Condition | None = None,
        return_values: tasks.DynamoReturnValues | None = None,
        result_selector: Mapping[str, Any] | None = None,
        result_path: str = sfn.JsonPath.DISCARD,
    ) -> tasks.DynamoUpdateItem:
        """One ledger rule as an UpdateItem: its update, its condition, and ``values`` for
        exactly their placeholders."""
        return tasks.DynamoUpdateItem(
            self.scope,
            id,
            table=self.ledger,
            key=dict(key),
            update_expression=change.text,
            condition_expression=condition.text if condition else None,
            expression_attribute_names=change.names or None,
            expression_attribute_values=expression_values(
                values, change, *([condition] if condition else [])
            ),
            return_values=return_values,
            result_selector=result_selector,
            result_path=result_path,
        )

    def record(
        self,
        id: str,
        *,
        record_state: str | None = None,
        values: Mapping[str, Value] | None = None,
        result_selector: Mapping[str, Any] | None = None,
        result_path: str = sfn.JsonPath.DISCARD,
    ) -> tasks.DynamoUpdateItem:
        """Update this decision's ledger record: its ``state`` and any ``values`` by name,
        stamped ``updated_at``; a new state also stamps ``at_<state>``, the step's time that
        ``nodemedic history`` lists."""
        fields: dict[str, Value] = {"updated_at": dynamo_now()}
        if record_state is not None:
            fields["state"] = Value.from_string(record_state)
            fields[STEP_AT_PREFIX + record_state] = dynamo_now()
        fields.update(values or {})
        return self.write(
            id,
            record_key(),
            ledger.record_update(*fields),
            {f":{name}": value for name, value in fields.items()},
            result_selector=result_selector,
            result_path=result_path,
        )

    def step(self, id: str, name: str) -> tasks.DynamoUpdateItem:
        """Enter a phase: the record's ``state`` and ``$.step`` say where a failure stopped;
        its ``node`` and ``node_group``, what a cleanup after an execution that was stopped
        acts on (``cleanup``)."""
        return self.guard(
            self.record(
                id,
                record_state=name,
                values={
                    "node": dynamo_text(state.NODE_NAME),
                    "node_group": dynamo_text(state.GROUP_NAME),
                },
                result_selector={"name": name, "at": NOW},
                result_path=state.STEP,
            )
        )

    def kube(
        self,
        id: str,
        op: str,
        payload: Mapping[str, Any],
        *,
        result_path: str,
        timed: bool = False,
        guard: bool = True,
        retries: int = 1,
    ) -> tasks.LambdaInvoke:
        """One kube Lambda op (docs/contracts.md); ``timed`` keeps only when it ran.
        ``retries``, each twice as long after the last as the one before, for an op whose
        failure nothing later makes good."""
        task = tasks.LambdaInvoke(
            self.scope,
            id,
            lambda_function=self.kube_function,
            payload=sfn.TaskInput.from_object({"op": op, **payload}),
            payload_response_only=True,
            result_selector=entered_at() if timed else None,
            result_path=result_path,
        )
        # The API server refused (overloaded or broken, ``KUBE_UNAVAILABLE``): retried first,
        # longer and each execution on its own random schedule (full jitter), so a storm's
        # retries do not come back at once. Ops are idempotent: one retry rides over any
        # other hiccup.
        task.add_retry(
            errors=[KUBE_UNAVAILABLE],
            max_attempts=REFUSED_ATTEMPTS,
            interval=Duration.seconds(self.settings.poll_seconds),
            backoff_rate=2,
            max_delay=Duration.seconds(REFUSED_MAX_POLLS * self.settings.poll_seconds),
            jitter_strategy=sfn.JitterType.FULL,
        )
        task.add_retry(
            errors=[sfn.Errors.TASKS_FAILED],
            max_attempts=retries,
            interval=Duration.seconds(self.settings.poll_seconds),
            backoff_rate=2 if retries > 1 else None,
        )
        return self.guard(task) if guard else task

    def aws(
        self,
        id: str,
        service: str,
        action: str,
        parameters: Mapping[str, Any],
        *,
        iam_resources: Sequence[str],
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
        return self.guard(task) if guard else task

    def auto_scaling_instance(
        self, id: str, *, keep: str, field: str, result_path: str, **also: str
    ) -> tasks.CallAwsService:
        """``{keep: [...]}``: Auto Scaling's ``field`` of this instance, a list of one, or
        none when the instance is in no group (or gone from it); ``also`` keeps more fields
        so, by name."""
        kept = {keep: field, **also}
        return self.aws(
            id,
            "autoscaling",
            "describeAutoScalingInstances",
            {"InstanceIds": sfn.JsonPath.list_at(state.INSTANCE_IDS)},
            iam_resources=unscoped("autoscaling", "describeAutoScalingInstances"),
            result_selector={
                name: sfn.JsonPath.list_at(f"$.AutoScalingInstances[*].{f}")
                for name, f in kept.items()
            },
            result_path=result_path,
        )

    def _policy(
        self, id: str, payload: Mapping[str, Any], result_path: str, *, guard: bool = True
    ) -> tasks.LambdaInvoke:
        """Date arithmetic by the policy Lambda: States Language has none."""
        task = tasks.LambdaInvoke(
            self.scope,
            id,
            lambda_function=self.policy_function,
            payload=sfn.TaskInput.from_object(dict(payload)),
            payload_response_only=True,
            result_path=result_path,
        )
        return self.guard(task) if guard else task

    def arithmetic(
        self, id: str, op: str, payload: Mapping[str, Any], result_path: str
    ) -> tasks.LambdaInvoke:
        """One more op of the policy Lambda (``lambdas.policy.handler``)."""
        return self._policy(id, {"op": op, **payload}, result_path)

    def elapsed(self, id: str, since: str, until: str, result_path: str) -> tasks.LambdaInvoke:
        """Seconds between two ISO times."""
        return self._policy(id, {"op": "elapsed", "since": since, "until": until}, result_path)

    def clock(self, id: str, *, guard: bool = True) -> tasks.LambdaInvoke:
        """``$.clock``: now, as this state runs, in epoch seconds, and the end of a parked
        lock's lease from now (``policy.clock``): a ledger rule must judge expiries by the
        time it runs at, not an earlier one."""
        return self._policy(id, {"op": "clock", "at": NOW}, state.CLOCK, guard=guard)

    # Passes --------------------------------------------------------------------------------

    def put(self, id: str, path: str, **fields: Any) -> sfn.Pass:
        """A Pass that writes ``fields`` as the object at ``path``."""
        return sfn.Pass(self.scope, id, parameters=fields, result_path=path)

    def next_round(self, id: str, loop: str, **keep: Any) -> sfn.Pass:
        """``loop``.rounds + 1, keeping the loop's other fields."""
        return self.put(
            id,
            loop,
            rounds=sfn.JsonPath.math_add(sfn.JsonPath.number_at(f"{loop}.rounds"), 1),
            **keep,
        )

    def found_error(self, id: str, error: str, cause: str, *args: str) -> sfn.Pass:
        """A failure found by a Choice, shaped like a caught error."""
        return self.put(
            id, state.ERROR, Error=error, Cause=formatted(cause, *args) if args else cause
        )

    def ended(self, id: str, outcome: str) -> sfn.Pass:
        """The remediation's outcome, for the report."""
        return self.put(id, state.OUTCOME, name=outcome)
