"""Auto-resume after a node repair, end to end: a node with training jobs' pods is replaced
by the synthesized state machine in moto, with the kube Lambda on the real kube-apiserver;
the opted-in job restarts whole, the one past its retries fails and is mailed, the job
that did not opt in is left alone, and the node's remediation succeeds all the same."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from nodemedic.contracts.jobs import JOB_FAILED_ANNOTATION, JOB_RESTARTS_ANNOTATION
from tests.support.flow import NEURON, World, neuron_line
from tests.support.kube import bind_pod, exists, job_notes, owner, wait_for

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


def test_a_replaced_node_restarts_its_opted_in_jobs_whole_and_leaves_the_others(
    world: World, core: client.CoreV1Api, admin: client.ApiClient, namespace: str
) -> None:
    sick, spare = world.group("trn1-resume", 2, **NEURON)
    jobs = {
        "llama-sft": {
            "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
            "sagemaker.amazonaws.com/job-max-retry-count": "3",
        },
        "llama-spent": {"nodemedic.io/enable-job-auto-resume": "true"},
        "eval-nightly": {},
    }
    for name, notes in jobs.items():
        ref = owner(admin, namespace, "Job", name, notes)
        for i, instance in enumerate((sick, spare)):
            bind_pod(core, namespace, f"{name}-{i}", world.nodes[instance], owner=ref)
    pipeline = world.pipelines["demo"]

    world.ship("demo", sick, neuron_line(sick))

    (execution,) = pipeline.executions(sick)
    result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED", result
    assert world.node(sick) is None, "the node was replaced"
    # Every rank of the opted-in job restarts, the one on the healthy node too.
    wait_for(lambda: not exists(core, namespace, "llama-sft-1"), what="llama-sft-1 deleted")
    assert job_notes(admin, namespace, "llama-sft")[JOB_RESTARTS_ANNOTATION] == "1 (1 full)"
    # No retries allowed: failed, its pods kept; the job that did not opt in untouched.
    assert JOB_FAILED_ANNOTATION in job_notes(admin, namespace, "llama-spent")
    assert exists(core, namespace, "llama-spent-1")
    assert exists(core, namespace, "eval-nightly-1")
    assert JOB_RESTARTS_ANNOTATION not in job_notes(admin, namespace, "eval-nightly")

    name = execution.rsplit(":", 1)[1]
    ledger = pipeline.item(sick, f"decision#{name}")
    assert ledger is not None and ledger["outcome"] == "replaced"
    found = json.loads(ledger["jobs"])
    assert sorted(j["name"] for j in found["jobs"]) == ["llama-sft", "llama-spent"]
    resumed = json.loads(ledger["resumed"])
    assert resumed["resumed"] == [f"{namespace}/llama-sft"]
    assert resumed["failed"] == [f"{namespace}/llama-spent"]
    mails = {m["subject"]: m for m in pipeline.messages(sick)}
    assert set(mails) == {f"nodemedic replaced: {sick}", f"nodemedic jobs after replaced: {sick}"}
    assert mails[f"nodemedic jobs after replaced: {sick}"]["jobs"]["failed"] == [
        f"{namespace}/llama-spent"
    ]
