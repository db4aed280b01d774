"""SageMaker HyperPod: find the cluster a node's instance is a node of, and reboot or replace
it through HyperPod's own calls (``hyperpod_clusters``; none listed, none of these states).

The node id HyperPod's calls take is the EC2 instance id, so a node is found by asking each
listed cluster ``DescribeClusterNode`` for it (``ResourceNotFound``: not that cluster's);
found, ``DescribeCluster`` says its ``NodeRecovery`` and the size of the cluster, the
breaker's group. A reboot is ``BatchRebootClusterNodes``, then the reboot phase's own watch
for a new boot id; a replacement is ``BatchReplaceClusterNodes``, then ``DescribeClusterNode``
until HyperPod no longer knows the old instance (the node it put in its place has a new
instance id), bounded by ``reboot_timeout`` as the Auto Scaling termination is. A node
HyperPod refuses (``Failed``: gone meanwhile, in use) fails the remediation with HyperPod's
reason, parked and mailed as any failure.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import entered_at, text_at

NOT_FOUND = "SageMaker.ResourceNotFoundException"
"""What Step Functions names SageMaker's ``ResourceNotFound``."""
SUBSTRATE = "hyperpod"


def cluster_arns(flow: Flow) -> list[str]:
    """The listed clusters' ARNs, the only ones the state machine's role may call."""
    stack = Stack.of(flow.scope)
    return [
        stack.format_arn(service="sagemaker", resource="cluster", resource_name=cluster_id)
        for _, cluster_id in flow.settings.hyperpod_clusters
    ]


def listed(flow: Flow) -> bool:
    """Whether the cluster lists HyperPod clusters: else none of these states."""
    return bool(flow.settings.hyperpod_clusters)


def on_hyperpod() -> sfn.Condition:
    return sfn.Condition.string_equals(state.SUBSTRATE, SUBSTRATE)


def find(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Look for the instance in each listed cluster in turn; found, ``$.target`` and
    ``$.group`` say so; in none, on to ``then`` as a node of no group (monitor only)."""
    s = flow.scope
    describe = flow.aws(
        "Describe HyperPod cluster",
        "sagemaker",
        "describeCluster",
        {"ClusterName": text_at(state.TARGET_CLUSTER)},
        iam_resources=cluster_arns(flow),
        result_path=state.HYPERPOD,
    )
    group = flow.arithmetic(
        "HyperPod group",
        "hyperpod",
        {
            "cluster": text_at(state.TARGET_CLUSTER),
            "description": sfn.JsonPath.object_at(state.HYPERPOD),
        },
        state.HYPERPOD,
    )
    target = flow.put(
        "HyperPod node",
        state.TARGET,
        substrate=SUBSTRATE,
        cluster=text_at(state.TARGET_CLUSTER),
        node_recovery=text_at(f"{state.HYPERPOD}.node_recovery"),
    )
    in_cluster = sfn.Pass(
        s, "In HyperPod cluster", input_path=f"{state.HYPERPOD}.group", result_path=state.GROUP
    )
    describe.next(group).next(target).next(in_cluster).next(then)
    following: sfn.IChainable = then
    clusters = zip(_names(flow), cluster_arns(flow), strict=True)
    for number, (name, arn) in reversed(list(enumerate(clusters))):
        lookup = flow.aws(
            f"Find HyperPod node {number + 1}",
            "sagemaker",
            "describeClusterNode",
            {"ClusterName": name, "NodeId": text_at(state.INSTANCE_ID)},
            iam_resources=[arn],
            result_selector={"cluster": name},
            result_path=state.TARGET,
        )
        lookup.add_catch(following, errors=[NOT_FOUND], result_path=sfn.JsonPath.DISCARD)
        lookup.next(describe)
        following = lookup
    return following


def _names(flow: Flow) -> list[str]:
    return [name for name, _ in flow.settings.hyperpod_clusters]


def _batch(flow: Flow, id: str, action: str, when: str) -> sfn.Chain:
    """One HyperPod batch call for the node; the time it ran kept as ``when``'s."""
    call = flow.aws(
        id,
        "sagemaker",
        action,
        {
            "ClusterName": text_at(state.TARGET_CLUSTER),
            "NodeIds": sfn.JsonPath.list_at(state.INSTANCE_IDS),
        },
        iam_resources=cluster_arns(flow),
        result_path=state.BATCH,
    )
    return sfn.Chain.start(call).next(flow.put(f"{id} at", state.time_of(when), **entered_at()))


def reboot(flow: Flow, *, then: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """``BatchRebootClusterNodes``; accepted, on to the reboot watch (``then``)."""
    call = _batch(flow, "Reboot HyperPod node", "batchRebootClusterNodes", "rebooted")
    return call.next(_accepted(flow, "Reboot", then=then, failure=failure))


def replace(flow: Flow, *, then: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """``BatchReplaceClusterNodes``, then wait until HyperPod no longer knows the instance:
    on to ``then`` (the Node's deletion); still there after ``reboot_timeout``, a failure."""
    s = flow.scope
    call = _batch(flow, "Replace HyperPod node", "batchReplaceClusterNodes", "replaced")
    check = flow.aws(
        "Check HyperPod node",
        "sagemaker",
        "describeClusterNode",
        {"ClusterName": text_at(state.TARGET_CLUSTER), "NodeId": text_at(state.INSTANCE_ID)},
        iam_resources=cluster_arns(flow),
        result_path=sfn.JsonPath.DISCARD,
    )
    check.add_catch(then, errors=[NOT_FOUND], result_path=sfn.JsonPath.DISCARD)
    wait = sfn.Wait(s, "Wait for HyperPod", time=flow.poll)
    not_replaced = flow.found_error(
        "Not replaced by HyperPod",
        "ReplacementTimeout",
        "HyperPod still runs instance {} after reboot_timeout",
        state.INSTANCE_ID,
    )
    begin = flow.put("Begin HyperPod watch", state.HYPERPOD_WATCH, rounds=0)
    begin.next(wait).next(check).next(
        sfn.Choice(s, "Replaced by HyperPod?")
        .when(
            sfn.Condition.number_greater_than_equals(
                f"{state.HYPERPOD_WATCH}.rounds", flow.reboot_rounds
            ),
            not_replaced.next(failure),
        )
        .otherwise(flow.next_round("Count HyperPod watch", state.HYPERPOD_WATCH).next(wait))
    )
    return call.next(_accepted(flow, "Replace", then=begin, failure=failure))


def _accepted(
    flow: Flow, verb: str, *, then: sfn.IChainable, failure: sfn.IChainable
) -> sfn.IChainable:
    refused = flow.found_error(
        f"{verb} refused by HyperPod",
        "HyperPodRefused",
        f"HyperPod refused to {verb.lower()} instance {{}}: {{}}",
        state.INSTANCE_ID,
        f"{state.BATCH}.Failed[0].Message",
    )
    return (
        sfn.Choice(flow.scope, f"{verb} accepted by HyperPod?")
        .when(sfn.Condition.is_present(f"{state.BATCH}.Failed[0]"), refused.next(failure))
        .otherwise(then)
    )
