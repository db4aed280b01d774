"""Proof of origin in every Region: a stack that names a Region nodemedic has no AWS
identity certificate for is refused where it enforces; a region-agnostic one (the app's)
is checked at run time, and the lines it cannot check page."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest

from nodemedic.catalog import load_catalog
from nodemedic.settings import ClusterSettings
from stacks.pipeline import PipelineStack
from stacks.synth import NO_BUNDLING
from tests.support.templates import SETTINGS, Template, resources
from world.aws.identity import local_authority


def stack(settings: ClusterSettings, region: str) -> PipelineStack:
    app = cdk.App(context=NO_BUNDLING)
    return PipelineStack(
        app,
        f"nodemedic-{settings.name}",
        settings=settings,
        catalog=load_catalog(),
        env=cdk.Environment(region=region),
    )


def test_a_stack_of_a_region_without_a_certificate_may_not_enforce(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="identity_certificates, or set proof_of_origin"):
        stack(ClusterSettings(name="nz"), "ap-southeast-6")
    pem = tmp_path / "nz.pem"
    pem.write_text(local_authority().certificate_pem)
    stack(ClusterSettings(name="nz", identity_certificates=(str(pem),)), "ap-southeast-6")
    stack(ClusterSettings(name="nz", proof_of_origin="audit"), "ap-southeast-6")
    stack(ClusterSettings(name="taipei"), "ap-east-2")


def test_lines_whose_origin_cannot_be_checked_page(template: Template) -> None:
    (alarm,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("AlarmName") == f"nodemedic-{SETTINGS.name}-unproven-evidence"
    ]
    assert (alarm["MetricName"], alarm["Namespace"], alarm["Statistic"]) == (
        "UnprovenEvidence",
        "NodeMedic",
        "Sum",
    )
    assert alarm["Dimensions"] == [
        {"Name": "Cluster", "Value": SETTINGS.name},
        {"Name": "Reason", "Value": "unverifiable"},
    ]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching" and alarm["AlarmActions"]
