"""The chart's admission policies beside the label requests' (test_chart.py): the job owner
policy, and lambdas/kube/admission-policies.yaml, the same policies for clusters without the
chart."""

from __future__ import annotations

import json
from pathlib import Path

from lambdas.kube.resume import RESUMABLE
from tests.support.admission import JOB_OWNER_POLICY, LABEL_POLICY, named, shipped_documents
from tests.support.helm import REQUIRED, render
from world.kube.chart import documents


def test_the_job_owner_policy_names_the_jobs_resume_knows_and_can_be_left_out(
    default: str, helm: Path
) -> None:
    """Its rules are CEL text: a kind whose pods' lines the job monitor and auto-resume take
    as its job's, left unnamed, would be a job anyone could feed (its behaviour:
    tests/integration/lambdas/kube/test_job_owners.py)."""
    policy, binding = named(documents(default), JOB_OWNER_POLICY)
    text = json.dumps(policy["spec"])
    for api_version, kind in RESUMABLE:
        assert f"o.apiVersion == '{api_version}' && o.kind == '{kind}'" in text, kind
    assert binding["spec"] == {"policyName": JOB_OWNER_POLICY, "validationActions": ["Deny"]}
    without = render(helm, {**REQUIRED, "jobOwners.policy": "false"})
    assert not named(documents(without), JOB_OWNER_POLICY)


def test_the_shipped_admission_policies_are_the_charts_defaults(default: str) -> None:
    """lambdas/kube/admission-policies.yaml is for clusters without the chart (kubectl
    apply): it must be what the chart installs, or one judges what the other lets through."""
    rendered = [
        d for name in (LABEL_POLICY, JOB_OWNER_POLICY) for d in named(documents(default), name)
    ]
    for document in rendered:
        document["metadata"].pop("labels")
    assert shipped_documents() == rendered
