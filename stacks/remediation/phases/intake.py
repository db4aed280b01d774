"""Intake: check the decision, record it, find its node group and plan.

``"Valid decision?"`` is the one check of the input's shape (every field of the contract,
schema 1); ``"Recorded by whom?"`` (``recorded``) checks that the process that makes
decisions of its source started it; the plan checks the values it acts on. ``"Plan"`` is
the one call of the policy Lambda before acting: it gets plain values (the group, the last
reboot's time), which the state machine reshapes from the kube Lambda's and DynamoDB's
answers itself.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.kube import MANUAL_SOURCE
from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE
from nodemedic.remediate.decision import REQUIRED_FIELDS, SCHEMA
from nodemedic.settings.groups import group_policies
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import (
    NOW,
    Value,
    dynamo_number,
    dynamo_text,
    reboot_key,
    record_key,
    text_at,
)
from stacks.remediation.kit.signals import metrics
from stacks.remediation.phases import deepcheck, deferred, hyperpod, karpenter
from stacks.remediation.phases.recorded import recorded

RECORDED_FIELDS = (
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
"""The decision's fields its ledger record keeps, as strings."""
REQUEST_FIELDS = ("requested_by", "request_reason")
"""What a manual decision adds (``nodemedic.remediate.manual``), kept on its record too."""


def intake(flow: Flow, *, report: sfn.IChainable, act: sfn.IChainable) -> sfn.IChainable:
    """The flow's start; a notify-only plan goes on to the ``report``, any other to ``act``."""
    s = flow.scope
    # Only a cluster that lists another substrate looks for one: the others' template stays.
    found: dict[str, object] = {"target": {}} if flow.settings.other_substrates else {}
    begin = sfn.Pass(
        s,
        "Begin",
        parameters={**state.initial_state(), **found},
    )
    # Checked before anything reads the input: a missing field would otherwise stop
    # the execution with an uncatchable States.Runtime error halfway through.
    complete = sfn.Condition.and_(
        *[sfn.Condition.is_present(state.incoming(name)) for name in REQUIRED_FIELDS],
        sfn.Condition.is_numeric(state.incoming("schema")),
        sfn.Condition.number_equals(state.incoming("schema"), SCHEMA),
        sfn.Condition.is_numeric(state.incoming("count")),
    )
    invalid = sfn.Fail(
        s,
        "Invalid decision",
        error="InvalidDecision",
        cause="the input is not a schema 1 decision record with every field of docs/contracts.md",
    )
    cluster = flow.settings.name
    wrong = sfn.Fail(
        s,
        "Not this cluster",
        error="WrongCluster",
        cause=f"this state machine remediates decisions of cluster {cluster} only",
    )
    ours = (
        sfn.Choice(s, "Ours?")
        .when(sfn.Condition.string_equals(state.incoming("cluster"), cluster), begin)
        .otherwise(wrong)
    )
    check = sfn.Choice(s, "Valid decision?").when(complete, ours).otherwise(invalid)
    record = flow.guard(
        tasks.DynamoPutItem(
            s,
            "Record decision",
            table=flow.ledger,
            item={
                **record_key(),
                **{name: dynamo_text(state.decision(name)) for name in RECORDED_FIELDS},
                "count": dynamo_number(state.decision("count")),
                "state": Value.from_string("open"),
                "started_at": dynamo_text(state.STARTED_AT),
                "updated_at": Value.from_string(NOW),
                "execution": Value.from_string(sfn.JsonPath.execution_id),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
    )
    plan = _plan(flow)
    group = _node_group(flow, plan)
    record.next(_request(flow, group))
    begin.next(recorded(flow, then=deepcheck.verdict(flow, then=record)))
    # "notified", or "refused" for a manual request where nodemedic does not act, or
    # "deferred" to HyperPod's own repair (its jobs resumed once it repaired the node).
    notified = flow.put(
        "Notified", state.OUTCOME, name=sfn.JsonPath.string_at(state.PLANNED_OUTCOME)
    )
    notified.next(report)
    plan.next(
        sfn.Choice(s, "Notify only?")
        .when(
            sfn.Condition.string_equals(state.MODE, "notify"),
            deferred.deferred(flow, notified=notified) if hyperpod.listed(flow) else notified,
        )
        .otherwise(act)
    )
    return check


def _request(flow: Flow, then: sfn.IChainable) -> sfn.IChainable:
    """Who asked for a manual decision and why, on its record (``nodemedic history``)."""
    asked = [state.decision(name) for name in REQUEST_FIELDS]
    kept = flow.guard(
        flow.record(
            "Record request",
            values={name: dynamo_text(state.decision(name)) for name in REQUEST_FIELDS},
        )
    )
    kept.next(then)
    return (
        sfn.Choice(flow.scope, "Asked by hand?")
        .when(
            sfn.Condition.and_(
                sfn.Condition.string_equals(state.decision("source"), MANUAL_SOURCE),
                *[sfn.Condition.is_string(path) for path in asked],
            ),
            kept,
        )
        .otherwise(then)
    )


def _node_group(flow: Flow, plan: sfn.IChainable) -> sfn.IChainable:
    """``$.group`` from Auto Scaling, when the instance is in a group; else from the listed
    HyperPod clusters, when it is a node of one (``$.target`` too)."""
    # Whether one GPU can be reset depends on the instance type (the plan's), read only by
    # a cluster that resets GPUs: the others' template stays as it was.
    types = {"types": "InstanceType"} if flow.settings.gpu_reset else {}
    find_group = flow.auto_scaling_instance(
        "Find node group",
        keep="groups",
        field="AutoScalingGroupName",
        result_path=state.ASG,
        **types,
    )
    # The kube Lambda's ``group_size``, not DescribeAutoScalingGroups: its answer lists every
    # instance and outgrows the 256 KiB a task may return (lambdas/kube/groups.py).
    describe_group = flow.kube(
        "Describe node group",
        "group_size",
        {"nodegroup": text_at(f"{state.ASG_GROUPS}[0]")},
        result_path=state.GROUP,
    )
    last_reboot = _last_reboot(flow, plan)
    find_group.next(
        sfn.Choice(flow.scope, "In a node group?")
        .when(sfn.Condition.is_present(f"{state.ASG_GROUPS}[0]"), describe_group.next(last_reboot))
        .otherwise(_elsewhere(flow, last_reboot))
    )
    return find_group


def _elsewhere(flow: Flow, then: sfn.IChainable) -> sfn.IChainable:
    """An instance in no Auto Scaling group: a node of a listed HyperPod cluster, else of a
    listed NodePool, else of none (monitor only)."""
    if karpenter.listed(flow):
        then = karpenter.find(flow, then=then)
    return hyperpod.find(flow, then=then) if hyperpod.listed(flow) else then


def _last_reboot(flow: Flow, plan: sfn.IChainable) -> sfn.IChainable:
    """``$.last_reboot``: ``{at}`` of the reboot marker for this fault, ``{}`` without one."""
    s = flow.scope
    read = flow.read("Read last reboot", reboot_key(), state.LAST_REBOOT)
    read.next(
        sfn.Choice(s, "Rebooted before?")
        .when(
            sfn.Condition.is_present(state.LAST_REBOOT_ITEM_AT),
            flow.put(
                "Last reboot",
                state.LAST_REBOOT,
                at=sfn.JsonPath.string_at(state.LAST_REBOOT_ITEM_AT),
            ).next(plan),
        )
        .otherwise(
            sfn.Pass(
                s,
                "Never rebooted",
                result=sfn.Result.from_object({}),
                result_path=state.LAST_REBOOT,
            ).next(plan)
        )
    )
    return read


def _plan(flow: Flow) -> sfn.Chain:
    """``"Plan"``, then the fault's own metric (its node group known by then)."""
    st = flow.settings
    plan = flow.guard(
        tasks.LambdaInvoke(
            flow.scope,
            "Plan",
            lambda_function=flow.policy_function,
            payload=sfn.TaskInput.from_object(
                {
                    "op": "plan",
                    "decision": sfn.JsonPath.object_at(state.DECISION),
                    "group": sfn.JsonPath.object_at(state.GROUP),
                    "last_reboot": sfn.JsonPath.object_at(state.LAST_REBOOT),
                    "now": NOW,
                    "policy": st.policy.to_mapping(),
                    **(
                        {"instance_types": sfn.JsonPath.list_at(state.ASG_TYPES)}
                        if st.gpu_reset
                        else {}
                    ),
                    "group_policies": group_policies(st),
                    **(
                        {"target": sfn.JsonPath.object_at(state.TARGET)}
                        if st.other_substrates
                        else {}
                    ),
                }
            ),
            payload_response_only=True,
            result_path=state.PLAN,
        )
    )
    fault_metric = metrics(
        flow,
        "Publish fault metric",
        sfn.JsonPath.string_at(state.decision("metric_namespace")),
        [{"name": sfn.JsonPath.string_at(state.decision("metric")), "value": 1, "unit": "Count"}],
    )
    # The record's time to live, once the plan knows now in epoch seconds.
    keep = flow.guard(
        flow.record("Keep history", values={HISTORY_TTL_ATTRIBUTE: dynamo_number(state.PURGE_AT)})
    )
    return plan.next(keep).next(fault_metric)
