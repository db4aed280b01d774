"""The CDK app as ``cdk synth`` runs it: cdk.json's command and clusters, cdk-nag, offline."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from app import build, clusters_from_context
from nodemedic.settings import CONTEXT_KEY, ClusterSettings, declare
from stacks import synth
from stacks.synth import NO_BUNDLING, add_pipelines, app_context, synth_template
from tests.support.paths import ROOT
from tests.support.templates import MACHINE, REMEDIATION, Template, one

CDK_JSON = json.loads((ROOT / "cdk.json").read_text())
CLI_CONTEXT = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
}
"""What the CDK CLI adds to the context of every synth (it only adds metadata)."""
NO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    "AWS_SESSION_TOKEN": "not-a-token",
    "AWS_PROFILE": "nodemedic-no-such-profile",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}
QUOTA_WARNING = "nodemedic:insights-alarm-quota"
AUTO_REPAIR_WARNING = "nodemedic:eks-auto-repair"
AUTO_MODE_REPAIR_WARNING = "nodemedic:auto-mode-repair"


def _no_network() -> list[str]:
    """A command prefix that runs the app in a network namespace of its own, where it can
    reach nothing, where the system allows one."""
    prefix = ["unshare", "--net", "--map-root-user"]
    with contextlib.suppress(OSError):
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0:
            return prefix
    return []


def _run_app(outdir: Path, context: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """cdk.json's app command the way the CDK CLI runs it (context and output directory in
    the environment), with garbage credentials, no Region and no network."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(NO_CREDENTIALS, CDK_OUTDIR=str(outdir), CDK_CONTEXT_JSON=json.dumps(context))
    return subprocess.run(
        [*_no_network(), *shlex.split(CDK_JSON["app"])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def synthesized(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """cdk.json's app with every cdk-nag check; the cloud assembly is written even when
    validation fails."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    context = {**CDK_JSON["context"], **CLI_CONTEXT, **NO_BUNDLING}
    return outdir, _run_app(outdir, context)


def _report(outdir: Path) -> dict[str, Any]:
    (report,) = json.loads((outdir / "validation-report.json").read_text())["pluginReports"]
    assert isinstance(report, dict)
    return report


def _metadata(outdir: Path, artifact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A stack artifact's metadata, which the cloud assembly keeps in a file of its own
    (``additionalMetadataFile``) or, before that, in the manifest."""
    metadata: dict[str, list[dict[str, Any]]] = artifact.get("metadata", {})
    if "additionalMetadataFile" in artifact:
        metadata = json.loads((outdir / artifact["additionalMetadataFile"]).read_text())
    return metadata


def _warnings(outdir: Path, artifact: dict[str, Any]) -> list[str]:
    return [
        str(entry["data"])
        for entries in _metadata(outdir, artifact).values()
        for entry in entries
        if entry["type"] == "aws:cdk:warning"
    ]


PRINTED = ("aws:cdk:info", "aws:cdk:warning", "aws:cdk:error")
"""The metadata entries the CDK CLI prints after a synth."""


def _traced(outdir: Path, artifact: dict[str, Any]) -> list[str]:
    """The printed entries that carry a stack trace."""
    return [
        f"{path}: {entry['type']}"
        for path, entries in _metadata(outdir, artifact).items()
        for entry in entries
        if entry["type"] in PRINTED and entry.get("trace")
    ]


def _clusters() -> list[ClusterSettings]:
    return clusters_from_context(CDK_JSON["context"][CONTEXT_KEY])


def test_cdk_synth_needs_no_credentials_network_or_lookups(
    synthesized: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outdir, run = synthesized
    # Only cdk-nag may stop the synth (the next test says why), nothing else.
    assert run.returncode == 0 or _report(outdir)["conclusion"] == "failure", run.stderr
    manifest = json.loads((outdir / "manifest.json").read_text())
    assert "missing" not in manifest, "the app looked something up in the account"
    for settings in _clusters():
        artifact = manifest["artifacts"][f"nodemedic-{settings.name}"]
        assert artifact["environment"] == "aws://unknown-account/unknown-region"
        assert (outdir / f"nodemedic-{settings.name}.template.json").is_file()
        warnings = _warnings(outdir, artifact)
        assert not [w for w in warnings if QUOTA_WARNING in w]
        # cdk.json's cluster does not say whether EKS node auto repair is on for its groups.
        assert (settings.node_groups, settings.eks_auto_repair) == (("demo-trn1",), "unknown")
        (auto_repair,) = [w for w in warnings if AUTO_REPAIR_WARNING in w]
        assert "--query nodegroup.nodeRepairConfig" in auto_repair
        assert "demo-trn1" in auto_repair
        # The CLI prints a warning's first frame outside aws-cdk-lib as its source: for an
        # app in Python that is the jsii runtime's bundle, a stray line on every synth.
        assert not _traced(outdir, artifact), "a warning carries a stack trace"


def test_cdk_nag_passes_and_every_acknowledgment_has_a_reason(
    synthesized: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outdir, _ = synthesized
    report = _report(outdir)
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


def _without_cli_metadata(template: Template) -> Template:
    """The template less what only the CLI's context adds: resource paths, asset
    metadata and the version-reporting resource."""
    resources = {
        logical_id: {k: v for k, v in resource.items() if k != "Metadata"}
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] != "AWS::CDK::Metadata"
    }
    conditions = {
        k: v for k, v in template.get("Conditions", {}).items() if k != "CDKMetadataAvailable"
    }
    rest = {k: v for k, v in template.items() if k not in ("Resources", "Conditions")}
    return {**rest, "Resources": resources, **({"Conditions": conditions} if conditions else {})}


def test_synth_template_is_the_template_cdk_synth_writes(
    synthesized: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outdir, _ = synthesized
    for settings in _clusters():
        written = json.loads((outdir / f"nodemedic-{settings.name}.template.json").read_text())
        assert "CDKMetadata" in written["Resources"]  # the CLI's context reached the app
        assert _without_cli_metadata(synth_template(settings)) == _without_cli_metadata(written)


def _context_entry(settings: ClusterSettings) -> dict[str, Any]:
    """The settings as cdk.json writes them: lists, and the settings declared as mappings
    (``spares``, ``actions``, ``hyperpod_clusters``) and ``group_overrides`` as mappings."""
    entry = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()}
    for name, spec in declare.specs(ClusterSettings).items():
        if spec.mapping is not None:
            entry[name] = dict(getattr(settings, name))
    entry["group_overrides"] = {
        group: {k: dict(v) if k == "actions" else v for k, v in own}
        for group, own in settings.group_overrides
    }
    return entry


def _definition(template: Template) -> Any:
    _, machine = one(template, MACHINE, REMEDIATION)
    return machine["Properties"]["DefinitionString"]


def test_the_remediation_tests_run_the_state_machine_cdk_synth_deploys(tmp_path: Path) -> None:
    """The remediation tests execute ``synth_template``'s state machine in moto; given the
    same settings on the command line (``-c``), the app deploys that very definition."""
    from tests.support import remediation

    assert vars(remediation)["synth_template"] is synth_template
    settings = remediation.ACTING
    context = {
        **app_context(),
        CONTEXT_KEY: json.dumps([_context_entry(settings)]),
        **NO_BUNDLING,
    }
    app = cdk.App(context=context, outdir=str(tmp_path))
    build(app)
    with contextlib.suppress(RuntimeError):  # cdk-nag's verdict is the test above's
        app.synth()
    deployed = json.loads((tmp_path / f"nodemedic-{settings.name}.template.json").read_text())
    assert _definition(synth_template(settings)) == _definition(deployed)


def test_a_bad_setting_stops_cdk_synth_with_a_message(tmp_path: Path) -> None:
    clusters = [{"name": "demo", "log_retention_days": 45}]
    run = _run_app(tmp_path, {CONTEXT_KEY: clusters})
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "nodemedic: nodemedic:clusters: cluster 1: log_retention_days 45 is not a retention "
        "CloudWatch Logs accepts; use one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, "
        "400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653"
    )
    assert not (tmp_path / "manifest.json").exists()


def test_too_many_insights_alarms_for_one_account_are_announced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cdk.json's one cluster stays under the quota (the offline synth above has no
    warning); past it, every stack says how many alarms there are in all."""
    monkeypatch.setattr(synth, "INSIGHTS_ALARM_QUOTA", 1)
    app = cdk.App(context={**app_context(), **NO_BUNDLING})
    clusters = [
        ClusterSettings(name="a"),
        ClusterSettings(name="b", node_groups=("p5",), eks_auto_repair="off", job_monitoring=True),
    ]
    stacks = add_pipelines(app, clusters, nag=False)
    # One per fault metric that makes nodemedic act, and the breaker's; the job monitor's too.
    assert [len(stack.alarms.insights) - len(stack.alarms.faults) for stack in stacks] == [1, 2]
    total = sum(len(stack.alarms.insights) for stack in stacks)
    for stack in stacks:
        (warning,) = [
            str(entry.data)
            for entry in stack.node.metadata
            if entry.type == "aws:cdk:warning" and QUOTA_WARNING in str(entry.data)
        ]
        assert f"{total} Metrics Insights alarms in all" in warning
        # No node groups, or auto repair known off: nothing to check in the account.
        assert not [e for e in stack.node.metadata if AUTO_REPAIR_WARNING in str(e.data)]


def test_a_cluster_listing_nodepools_is_told_of_auto_modes_own_repair() -> None:
    app = cdk.App(context={**app_context(), **NO_BUNDLING})
    listed, plain = add_pipelines(
        app,
        [ClusterSettings(name="k", karpenter_nodepools=("gpu",)), ClusterSettings(name="p")],
        nag=False,
    )
    (warning,) = [
        str(e.data) for e in listed.node.metadata if AUTO_MODE_REPAIR_WARNING in str(e.data)
    ]
    assert "gpu" in warning and "Auto Mode" in warning
    assert not [e for e in plain.node.metadata if AUTO_MODE_REPAIR_WARNING in str(e.data)]


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
        ("[{", "Expecting"),
    ],
)
def test_a_bad_cluster_list_stops_the_synth(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        clusters_from_context(value)


def test_jsii_runs_on_the_projects_node_lts_and_prints_no_banner() -> None:
    """The machine's own ``node`` may be a line jsii calls end-of-life (it then prints a
    banner of ``!!`` lines on every synth); importing the stacks uses the project's."""
    environment = {k: v for k, v in os.environ.items() if k != "JSII_NODE"}
    environment["PATH"] = "/usr/bin:/bin"
    result = subprocess.run(
        [sys.executable, "-c", "import stacks.synth"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "!!" not in result.stderr and "end-of-life" not in result.stderr, result.stderr
