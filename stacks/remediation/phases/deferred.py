"""A decision deferred to HyperPod's own repair (``hyperpod_repair``, ``NodeRecovery
Automatic``): nodemedic touches nothing on the node, but the training jobs on it are still
its to resume, as after any repair.

The opted-in jobs with pods on the node are found at once, before HyperPod's repair takes
their pods away. Then the node is watched, up to ``reboot_timeout`` as a reboot is, until
HyperPod has rebooted it (Ready with a new boot id) or replaced it (its Node gone, or
HyperPod no longer knowing the instance), and the report resumes the jobs
(``resume.resume_jobs``). A node HyperPod left as it was kept its pods running: nothing is
resumed, the outcome stays ``deferred``.

HyperPod's own detection and nodemedic's line of one fault are two decisions, each
deferred: the jobs are resumed under the repair's key (``state.DEFERRED_KEY``), not the
decision's, so one repair restarts a job once. Every step is best effort, as the resume's
are: an error ends the watch, and the decision is reported as deferred.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate.target import DEFERRED
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import formatted, text_at
from stacks.remediation.phases import hyperpod
from stacks.remediation.phases.resume import find_jobs, jobs_found


def deferred(flow: Flow, *, notified: sfn.IChainable) -> sfn.IChainable:
    """Where a notify-only plan goes: one deferred to HyperPod has its jobs found and its
    node watched first; every one then goes on to ``notified``."""
    s = flow.scope
    locate = flow.kube(
        "Locate deferred node",
        "locate",
        {"instance_id": text_at(state.INSTANCE_ID)},
        result_path=state.NODE,
        guard=False,
    )
    locate.add_catch(notified, result_path=sfn.JsonPath.DISCARD)
    watch = _watch(flow, notified=notified)
    jobs = (
        sfn.Choice(s, "Jobs on deferred node?")
        .when(
            jobs_found(),
            watch,
        )
        .otherwise(notified)
    )
    found = sfn.Condition.and_(
        sfn.Condition.is_string(state.NODE_NAME),
        sfn.Condition.not_(sfn.Condition.string_equals(state.NODE_NAME, "")),
    )
    locate.next(
        sfn.Choice(s, "Deferred node found?")
        .when(found, find_jobs(flow, jobs, suffix=" on deferred node"))
        .otherwise(notified)
    )
    return (
        sfn.Choice(s, "Deferred to HyperPod?")
        .when(sfn.Condition.string_equals(state.PLANNED_OUTCOME, DEFERRED), locate)
        .otherwise(notified)
    )


def _watch(flow: Flow, *, notified: sfn.IChainable) -> sfn.IChainable:
    """Poll the Node, then HyperPod, for the repair, up to ``reboot_timeout``; repaired, the
    repair's key, then ``notified``."""
    s = flow.scope
    begin = flow.put("Begin deferred watch", state.DEFERRED, rounds=0)
    wait = sfn.Wait(s, "Wait for HyperPod's repair", time=flow.poll)
    count = flow.next_round("Count deferred watch", state.DEFERRED)
    status = flow.kube(
        "Deferred node status",
        "node_status",
        {"node": text_at(state.NODE_NAME), "boot_id": text_at(state.BOOT_ID)},
        result_path=state.NODE_STATUS,
        guard=False,
    )
    status.add_catch(notified, result_path=sfn.JsonPath.DISCARD)

    def repaired(id: str, key: str, *paths: str) -> sfn.Pass:
        keyed = flow.put(
            id,
            state.DEFERRED,
            rounds=sfn.JsonPath.number_at(state.DEFERRED_ROUNDS),
            key=formatted(key, state.INSTANCE_ID, *paths),
        )
        keyed.next(notified)
        return keyed

    replaced = repaired("Replaced by HyperPod", "{}:replaced")
    # A replacement HyperPod made shows first as the instance gone from its cluster: the
    # old Node may stay NotReady until someone deletes it.
    known = flow.aws(
        "Deferred node in HyperPod?",
        "sagemaker",
        "describeClusterNode",
        {"ClusterName": text_at(state.TARGET_CLUSTER), "NodeId": text_at(state.INSTANCE_ID)},
        iam_resources=hyperpod.cluster_arns(flow),
        guard=False,
    )
    known.add_catch(replaced, errors=[hyperpod.NOT_FOUND], result_path=sfn.JsonPath.DISCARD)
    known.add_catch(notified, result_path=sfn.JsonPath.DISCARD)
    known.next(
        sfn.Choice(s, "Deferred watch over?")
        .when(
            sfn.Condition.number_greater_than_equals(state.DEFERRED_ROUNDS, flow.reboot_rounds),
            notified,
        )
        .otherwise(count.next(wait))
    )
    begin.next(wait).next(status).next(
        sfn.Choice(s, "Repaired by HyperPod?")
        .when(
            sfn.Condition.boolean_equals(state.REBOOTED, True),
            repaired("Rebooted by HyperPod", "{}:{}", state.NEW_BOOT_ID),
        )
        .when(sfn.Condition.is_null(state.NEW_BOOT_ID), replaced)
        .otherwise(known)
    )
    return begin
