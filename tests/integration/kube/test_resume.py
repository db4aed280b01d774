"""Auto-resume through the kube Lambda, on the real kube-apiserver as the remediator: the
opted-in batch/v1 Jobs (either annotation spelling) found from a node's pods, each
restarted whole (every pod, on every node), counted, told with an Event, and failed once
its retries are spent. (PyTorchJob is not here: the local kube-apiserver build crashes on
any custom resource, see docs/jobs.md.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts import JOB_FAILED_ANNOTATION, JOB_RESTARTS_ANNOTATION
from tests.support.kube import Invoke, Node, bind_pod, exists, owner, running, wait_for

pytestmark = pytest.mark.kube
OPTED_IN = {
    "nodemedic.io/enable-job-auto-resume": "true",
    "nodemedic.io/job-max-retry-count": "1",
}
HYPERPOD = {
    "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
    "sagemaker.amazonaws.com/job-max-retry-count": "2",
}
Pods = Callable[[dict[str, Any], str, list[Node]], list[str]]


@pytest.fixture
def pods(core: client.CoreV1Api, namespace: str) -> Pods:
    """One running pod of the job ``ref`` on each node, labelled as its controller does."""

    def make(ref: dict[str, Any], label: str, nodes: list[Node]) -> list[str]:
        names = [f"{ref['name']}-{i}" for i in range(len(nodes))]
        for name, node in zip(names, nodes, strict=True):
            bind_pod(core, namespace, name, node.name, labels={label: ref["name"]}, owner=ref)
        for name in names:
            wait_for(lambda n=name: running(core, namespace, n), what=f"{name} running")  # type: ignore[misc]
        return names

    return make


def job_notes(admin: client.ApiClient, namespace: str, ref: dict[str, Any]) -> dict[str, str]:
    meta = client.BatchV1Api(admin).read_namespaced_job(ref["name"], namespace).metadata
    return dict(meta.annotations or {})


def reasons(core: client.CoreV1Api, namespace: str, name: str) -> list[str]:
    found = core.list_namespaced_event(namespace).items
    return sorted(e.reason for e in found if e.involved_object.name == name)


def resume(invoke: Invoke, jobs: list[dict[str, str]], node: Node, decision: str) -> Any:
    return invoke({"op": "resume_jobs", "jobs": jobs, "node": node.name, "decision_id": decision})


def test_opted_in_jobs_on_a_node_restart_whole_and_fail_past_their_retries(
    *,
    invoke: Invoke,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    new_node: Callable[..., Node],
    pods: Pods,
) -> None:
    sick, other = new_node(), new_node()
    batch = owner(admin, namespace, "Job", "llama-sft", OPTED_IN)
    hyperpod = owner(admin, namespace, "Job", "llama-pretrain", HYPERPOD)
    plain = owner(admin, namespace, "Job", "eval-nightly")
    elsewhere = owner(admin, namespace, "Job", "far-away", OPTED_IN)
    batch_pods = pods(batch, "batch.kubernetes.io/job-name", [sick, other])
    hyperpod_pods = pods(hyperpod, "job-name", [sick, other])
    plain_pods = pods(plain, "job-name", [sick, other])
    far_pods = pods(elsewhere, "job-name", [other])

    found = invoke({"op": "jobs_on_node", "node": sick.name})

    assert found["count"] == 2
    assert [(j["kind"], j["name"]) for j in found["jobs"]] == [
        ("Job", "llama-pretrain"),
        ("Job", "llama-sft"),
    ]

    done = resume(invoke, found["jobs"], sick, "decision-1")

    assert sorted(done["resumed"]) == [f"{namespace}/llama-pretrain", f"{namespace}/llama-sft"]
    assert done["tell"] is False
    # Every rank restarts, the one on the healthy node too; other jobs keep theirs.
    for pod in batch_pods + hyperpod_pods:
        wait_for(lambda p=pod: not exists(core, namespace, p), what=f"{pod} deleted")  # type: ignore[misc]
    assert all(exists(core, namespace, p) for p in plain_pods + far_pods)
    for ref in (batch, hyperpod):
        assert job_notes(admin, namespace, ref)[JOB_RESTARTS_ANNOTATION] == "1 (1 full)"
        assert reasons(core, namespace, ref["name"]) == ["NodeMedicJobResumed"]
    assert JOB_RESTARTS_ANNOTATION not in job_notes(admin, namespace, plain)

    # The state machine may repeat the call: one decision restarts a job once.
    again_pods = pods(batch, "batch.kubernetes.io/job-name", [other])
    assert sorted(resume(invoke, found["jobs"], sick, "decision-1")["resumed"]) == sorted(
        done["resumed"]
    )
    assert exists(core, namespace, again_pods[0])

    # A second repair: llama-sft's one retry is spent, llama-pretrain has another.
    later = resume(invoke, found["jobs"], sick, "decision-2")

    assert later["failed"] == [f"{namespace}/llama-sft"]
    assert later["resumed"] == [f"{namespace}/llama-pretrain"]
    assert later["tell"] is True
    assert "failed (retries spent)" in later["message"]
    failed = job_notes(admin, namespace, batch)
    assert JOB_FAILED_ANNOTATION in failed
    assert failed[JOB_RESTARTS_ANNOTATION] == "1 (1 full)"
    assert exists(core, namespace, again_pods[0]), "failing a job deletes none of its pods"
    assert "NodeMedicJobFailed" in reasons(core, namespace, "llama-sft")
    assert job_notes(admin, namespace, hyperpod)[JOB_RESTARTS_ANNOTATION] == "2 (2 full)"


def test_a_job_that_cannot_be_resumed_is_told_and_the_others_still_resume(
    *,
    invoke: Invoke,
    admin: client.ApiClient,
    core: client.CoreV1Api,
    namespace: str,
    node: Node,
    pods: Pods,
) -> None:
    broken = owner(
        admin,
        namespace,
        "Job",
        "bad-policy",
        {**OPTED_IN, "nodemedic.io/run-policy": "cleanPodPolicy: Sometimes"},
    )
    good = owner(admin, namespace, "Job", "good", OPTED_IN)
    broken_pods = pods(broken, "job-name", [node])
    good_pods = pods(good, "job-name", [node])
    jobs = invoke({"op": "jobs_on_node", "node": node.name})["jobs"]

    done = resume(invoke, jobs, node, "decision-3")

    assert done["resumed"] == [f"{namespace}/good"]
    assert done["tell"] is True
    assert len(done["errors"]) == 1 and "cleanPodPolicy" in done["errors"][0]
    assert exists(core, namespace, broken_pods[0])
    wait_for(lambda: not exists(core, namespace, good_pods[0]), what="good's pod deleted")
    assert reasons(core, namespace, "bad-policy") == ["NodeMedicInvalidLogMonitoring"]


def test_resume_refuses_a_malformed_job_list(invoke: Invoke, node: Node) -> None:
    with pytest.raises(ValueError, match="jobs"):
        resume(invoke, [{"kind": "Job", "name": "x"}], node, "decision-4")
