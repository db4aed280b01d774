"""Building the CDK app, and synthesizing one cluster's stack in-process for the tests
and the local mode.

``synth_template`` uses the app context of cdk.json, as ``cdk synth`` does, so its
template is the one ``cdk synth`` produces; it only skips bundling (the local mode runs
handlers in-process), so it needs no network and no pip run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from nodemedic.catalog import extra_paths_from_env, load_catalog
from nodemedic.settings import CONTEXT_KEY, ClusterSettings
from nodemedic.settings.groups import catalog_errors
from stacks.pipeline import PipelineStack, stack_name
from stacks.synth_cache import cached_template

ROOT = Path(__file__).resolve().parent.parent
NO_BUNDLING: dict[str, Any] = {"aws:cdk:bundling-stacks": []}
"""App context that stages assets without bundling them."""
INSIGHTS_ALARM_QUOTA = 200
"""Default quota of Metrics Insights alarms per account and Region."""
AUTO_REPAIR_WARNING = "nodemedic:eks-auto-repair"
AUTO_MODE_REPAIR_WARNING = "nodemedic:auto-mode-repair"


def app_context() -> dict[str, Any]:
    """cdk.json's context without the clusters: the feature flags every synth shares."""
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8")).get("context", {})
    return {key: value for key, value in context.items() if key != CONTEXT_KEY}


def add_pipelines(
    app: cdk.App,
    clusters: Sequence[ClusterSettings],
    *,
    nag: bool = True,
) -> list[PipelineStack]:
    """One stack per cluster; with ``nag`` cdk-nag's AwsSolutions checks gate the synth.

    The catalog is the built-in rules plus the files named in NODEMEDIC_CATALOG_EXTRA; a
    setting's ``actions`` that name no rule of it, or make a notify-only rule act, are
    refused (ValueError, one line each).
    """
    extra = extra_paths_from_env()
    catalog = load_catalog()
    # Rule ids are known only with the catalog, which the settings are parsed without.
    refused = [
        f"cluster {s.name}: {error}" for s in clusters for error in catalog_errors(s, catalog)
    ]
    if refused:
        raise ValueError("\n".join(refused))
    stacks = [
        PipelineStack(app, stack_name(s), settings=s, catalog=catalog, catalog_files=extra)
        for s in clusters
    ]
    # Stacks are environment-agnostic: they may all go to one account and Region.
    alarms = sum(len(stack.alarms.insights) for stack in stacks)
    if alarms > INSIGHTS_ALARM_QUOTA:
        for stack in stacks:
            cdk.Annotations.of(stack).add_warning_v2(
                "nodemedic:insights-alarm-quota",
                f"{alarms} Metrics Insights alarms in all; the default quota is "
                f"{INSIGHTS_ALARM_QUOTA} per account and Region: request an increase "
                "before deploying to one account and Region",
            )
    for stack, settings in zip(stacks, clusters, strict=True):
        _warn_of_auto_repair(stack, settings)
        _warn_of_auto_mode_repair(stack, settings)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stacks


def _warn_of_auto_repair(stack: PipelineStack, settings: ClusterSettings) -> None:
    """Synthesis reads nothing from the account, so it cannot see a node group's
    ``nodeRepairConfig``: until the settings say, the user is asked to look."""
    if settings.eks_auto_repair != "unknown" or not settings.node_groups:
        return
    cdk.Annotations.of(stack).add_warning_v2(
        AUTO_REPAIR_WARNING,
        f"cluster {settings.name}: is EKS node auto repair on for "
        f"{', '.join(settings.node_groups)}? It would act on the same nodes as nodemedic. "
        "Check each managed node group with `aws eks describe-nodegroup --cluster-name "
        f"{settings.eks_cluster_name or settings.name} --nodegroup-name <group> --query "
        "nodegroup.nodeRepairConfig` and set eks_auto_repair to off (or turn it off)",
    )


def _warn_of_auto_mode_repair(stack: PipelineStack, settings: ClusterSettings) -> None:
    """EKS Auto Mode repairs its nodes itself, on by default (EKS User Guide, "Automatically
    repair nodes in EKS clusters"); a listed NodePool of Auto Mode's would have two repairs
    on one node, which the synth cannot see, so it says so."""
    if not settings.karpenter_nodepools:
        return
    cdk.Annotations.of(stack).add_warning_v2(
        AUTO_MODE_REPAIR_WARNING,
        f"cluster {settings.name}: if any of {', '.join(settings.karpenter_nodepools)} is an "
        "EKS Auto Mode NodePool, EKS node auto repair (on by default in Auto Mode) replaces "
        "its nodes too; turn it off in the cluster's node repair configuration, or leave "
        "the NodePool out of karpenter_nodepools (docs/deploy.md, Karpenter and EKS Auto "
        "Mode). Karpenter's own NodeRepair gate is checked at run time",
    )


def synth_template(settings: ClusterSettings) -> dict[str, Any]:
    """The CloudFormation template of ``settings``'s PipelineStack, synthesized once per
    machine for the same inputs (``stacks.synth_cache``)."""

    def synthesize() -> dict[str, Any]:
        app = cdk.App(context={**app_context(), **NO_BUNDLING})
        (stack,) = add_pipelines(app, [settings], nag=False)
        template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
        return template

    return cached_template(settings, extra_paths_from_env(), synthesize)
