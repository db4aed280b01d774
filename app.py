"""The nodemedic CDK app: one pipeline stack per cluster of the context key
``nodemedic:clusters`` (cdk.json, or ``-c 'nodemedic:clusters=[...]'``).

``npx cdk synth`` / ``npx cdk deploy --all``. Synthesis needs no AWS credentials and looks
nothing up; cdk-nag's AwsSolutions checks run on every synth and fail it on a finding
that is neither fixed nor acknowledged.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import aws_cdk as cdk

from nodemedic.settings import CONTEXT_KEY, ClusterSettings, parse_clusters
from stacks.pipeline import PipelineStack
from stacks.synth import add_pipelines


def clusters_from_context(value: Any) -> list[ClusterSettings]:
    """The clusters of the context value; ``-c`` on the command line gives it as JSON text."""
    if isinstance(value, str):
        value = json.loads(value)
    clusters = parse_clusters(value)
    if not clusters:
        raise ValueError(
            "no cluster configured: set it in cdk.json to a list of clusters "
            '(at least [{"name": "<cluster>"}]); docs/deploy.md lists the settings'
        )
    return clusters


def build(app: cdk.App) -> list[PipelineStack]:
    return add_pipelines(app, clusters_from_context(app.node.try_get_context(CONTEXT_KEY)))


NO_STACK_TRACES = {"aws:cdk:disable-stack-trace": True}
"""The CDK CLI prints a warning's first stack frame outside aws-cdk-lib as its source: for an
app in Python, the jsii runtime's bundle (``/tmp/.../lib/program.js:1:5591``), a line that
names nothing of the app. cdk.json cannot say it: the CLI warns about any ``aws:`` key there."""


def main() -> None:
    app = cdk.App(context=NO_STACK_TRACES)
    try:
        build(app)
    except (ValueError, TypeError) as exc:
        sys.exit(f"nodemedic: {CONTEXT_KEY}: {exc}")
    app.synth()


if __name__ == "__main__":
    main()
