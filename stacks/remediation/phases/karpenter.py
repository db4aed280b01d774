"""Karpenter and EKS Auto Mode: find the NodeClaim that launched a node's instance, and
replace the node by deleting it (``karpenter_nodepools``; none listed, none of these states).

The NodeClaim is found by the kube Lambda's ``nodeclaim_of`` (``status.nodeName`` and
``status.providerID``, never a label a pod could set); only one of a listed NodePool makes
the node Karpenter's (or Auto Mode's, by its NodeClass's API group). Its NodePool is the
breaker's group, of unknown size: one node of it in remediation at a time. A replacement
comes after nodemedic's own cordon and drain, as for every node: ``delete_nodeclaim``, then
``nodeclaim_gone`` until Karpenter's termination finalizer has taken the NodeClaim and its
Node, bounded by ``reboot_timeout``; Karpenter provisions the capacity the pending pods ask
for. A NodeClaim that no longer names the node is a failure with the reason, mailed. A
reboot of a self-managed Karpenter node is EC2's (``reboot``); Auto Mode's are capped
before (``nodemedic.remediate.target``).
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.substrates import (
    AUTO_MODE_NODECLASS_GROUP,
    DELETE_NODECLAIM_OP,
    NODECLAIM_GONE_OP,
    NODECLAIM_OF_OP,
)
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import entered_at, text_at

NODECLAIM = "$.nodeclaim"
"""``nodeclaim_of``'s answer: ``{nodeclaim, nodepool, nodeclass_group, provider_id}``."""
DELETED = "$.nodeclaim_deleted"
GONE = "$.nodeclaim_gone"
WATCH = "$.nodeclaim_watch"
"""``{rounds}``: the wait for the NodeClaim and its Node to go."""


def listed(flow: Flow) -> bool:
    """Whether the cluster lists NodePools: else none of these states."""
    return bool(flow.settings.karpenter_nodepools)


def on_karpenter() -> sfn.Condition:
    return sfn.Condition.or_(
        *(sfn.Condition.string_equals(state.SUBSTRATE, s) for s in ("karpenter", "automode"))
    )


def find(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """The node's NodeClaim, where it is one of a listed NodePool: ``$.target`` and
    ``$.group`` say so; else on to ``then`` as a node of no group (monitor only)."""
    s = flow.scope
    locate = flow.kube(
        "Locate node for NodeClaim",
        "locate",
        {"instance_id": text_at(state.INSTANCE_ID)},
        result_path=state.NODE,
    )
    claim = flow.kube(
        "Find NodeClaim", NODECLAIM_OF_OP, {"node": text_at(state.NODE_NAME)}, result_path=NODECLAIM
    )
    pool = f"{NODECLAIM}.nodepool"
    in_pool = sfn.Pass(
        s,
        "In NodePool",
        parameters={"name": text_at(pool), "size": 0, "found": True},
        result_path=state.GROUP,
    )
    in_pool.next(then)

    def target(id: str, substrate: str) -> sfn.Pass:
        found = flow.put(
            id, state.TARGET, substrate=substrate, nodeclaim=text_at(f"{NODECLAIM}.nodeclaim")
        )
        found.next(in_pool)
        return found

    ours = sfn.Condition.and_(
        sfn.Condition.is_string(f"{NODECLAIM}.nodeclaim"),
        sfn.Condition.not_(sfn.Condition.string_equals(f"{NODECLAIM}.nodeclaim", "")),
        sfn.Condition.or_(
            *(sfn.Condition.string_equals(pool, name) for name in flow.settings.karpenter_nodepools)
        ),
    )
    auto_mode = sfn.Condition.string_equals(
        f"{NODECLAIM}.nodeclass_group", AUTO_MODE_NODECLASS_GROUP
    )
    claim.next(
        sfn.Choice(s, "NodeClaim of a listed NodePool?")
        .when(sfn.Condition.and_(ours, auto_mode), target("Auto Mode node", "automode"))
        .when(ours, target("Karpenter node", "karpenter"))
        .otherwise(then)
    )
    locate.next(
        sfn.Choice(s, "Node to look up?")
        .when(sfn.Condition.is_string(state.NODE_NAME), claim)
        .otherwise(then)
    )
    return locate


def replace(flow: Flow, *, then: sfn.IChainable, failure: sfn.IChainable) -> sfn.IChainable:
    """Delete the NodeClaim, then wait until it and its Node are gone: on to ``then``."""
    s = flow.scope
    node = {"node": text_at(state.NODE_NAME), "nodeclaim": text_at(f"{state.TARGET}.nodeclaim")}
    delete = flow.kube("Delete NodeClaim", DELETE_NODECLAIM_OP, node, result_path=DELETED)
    gone = flow.kube("NodeClaim gone?", NODECLAIM_GONE_OP, node, result_path=GONE)
    wait = sfn.Wait(s, "Wait for Karpenter", time=flow.poll)
    stale = flow.found_error(
        "NodeClaim moved on",
        "NodeClaimNotFound",
        "NodeClaim {} no longer names node {}: nothing was deleted",
        f"{state.TARGET}.nodeclaim",
        state.NODE_NAME,
    )
    not_gone = flow.found_error(
        "NodeClaim not gone",
        "TerminationTimeout",
        "NodeClaim {} was still there after reboot_timeout",
        f"{state.TARGET}.nodeclaim",
    )
    begin = flow.put("Begin NodeClaim watch", WATCH, rounds=0)
    at = flow.put("NodeClaim deleted at", state.time_of("replaced"), **entered_at())
    delete.next(
        sfn.Choice(s, "NodeClaim deleted?")
        .when(sfn.Condition.boolean_equals(f"{DELETED}.deleted", True), at)
        .otherwise(stale.next(failure))
    )
    at.next(begin).next(wait).next(gone).next(
        sfn.Choice(s, "Gone with its Node?")
        .when(sfn.Condition.boolean_equals(f"{GONE}.gone", True), then)
        .when(
            sfn.Condition.number_greater_than_equals(f"{WATCH}.rounds", flow.reboot_rounds),
            not_gone.next(failure),
        )
        .otherwise(flow.next_round("Count NodeClaim watch", WATCH).next(wait))
    )
    return delete
