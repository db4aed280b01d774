"""The CDK app as ``cdk synth`` runs it: cdk.json's clusters, cdk-nag, offline."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from app import build, clusters_from_context
from stacks.settings import CONTEXT_KEY
from stacks.synth import NO_BUNDLING, synth_template

ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = json.loads((ROOT / "cdk.json").read_text())


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """cdk.json's app with every cdk-nag check: the cloud assembly's directory (written
    even when validation fails) and cdk-nag's report."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context={**CDK_JSON["context"], **NO_BUNDLING}, outdir=str(outdir))
    build(app)
    with contextlib.suppress(RuntimeError):  # ValidationFailed: the report says why
        app.synth()
    (report,) = json.loads((outdir / "validation-report.json").read_text())["pluginReports"]
    return outdir, report


def test_cdk_json_runs_the_app_with_the_project_venv() -> None:
    assert CDK_JSON["app"] == ".venv/bin/python app.py"


def test_cdk_nag_passes_and_every_acknowledgment_has_a_reason(
    synthesized: tuple[Path, dict[str, Any]],
) -> None:
    _, report = synthesized
    open_findings = [
        f"{v['ruleName']} at {', '.join(c['constructPath'] for c in v['violatingConstructs'])}"
        for v in report["violations"]
    ]
    assert not open_findings, "cdk-nag findings neither fixed nor acknowledged:\n" + "\n".join(
        open_findings
    )
    assert report["conclusion"] == "success"
    acknowledged = report["suppressedViolations"]
    assert acknowledged
    for finding in acknowledged:
        assert finding["acknowledgedId"].startswith("AwsSolutions::AwsSolutions-")
        assert len(finding["reason"]) > 40, finding["acknowledgedId"]


def test_synth_template_is_the_template_cdk_synth_writes(
    synthesized: tuple[Path, dict[str, Any]],
) -> None:
    outdir, _ = synthesized
    (settings,) = clusters_from_context(CDK_JSON["context"][CONTEXT_KEY])
    written = json.loads((outdir / f"nodemedic-{settings.name}.template.json").read_text())
    assert synth_template(settings) == written
    manifest = json.loads((outdir / "manifest.json").read_text())
    environment = manifest["artifacts"][f"nodemedic-{settings.name}"]["environment"]
    assert environment == "aws://unknown-account/unknown-region"


def test_clusters_may_be_given_as_json_on_the_command_line() -> None:
    (cluster,) = clusters_from_context('[{"name": "prod", "node_groups": ["trn2"]}]')
    assert cluster.name == "prod"
    assert cluster.node_groups == ("trn2",)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "no cluster configured"),
        ([], "no cluster configured"),
        ([{"name": "demo", "max_paralel": 3}], "unknown cluster setting"),
        ([{"name": "demo"}, {"name": "demo"}], "unique"),
    ],
)
def test_a_bad_cluster_list_stops_the_synth(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        clusters_from_context(value)
