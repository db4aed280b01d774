"""Auto-resume through the kube Lambda, on the real kube-apiserver as the remediator: the
opted-in jobs (batch/v1 Jobs under either annotation spelling, and Kubeflow PyTorchJobs,
whose CRD the apiserver serves here) found from a node's pods, each restarted whole (every
pod, on every node), counted, told with an Event, and failed once its retries are spent.
No PyTorchJob controller runs: the tests make the job's pods as the training operator
does, and look at what nodemedic does to them and to the job."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from nodemedic.contracts.jobs import JOB_FAILED_ANNOTATION, JOB_RESTARTS_ANNOTATION, PYTORCHJOB_API
from tests.support.kube import (
    Invoke,
    Node,
    bind_pod,
    device_record,
    exists,
    holds,
    owner,
    running,
    wait_for,
)

pytestmark = pytest.mark.kube
OPTED_IN = {
    "nodemedic.io/enable-job-auto-resume": "true",
    "nodemedic.io/job-max-retry-count": "1",
}
HYPERPOD = {
    "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
    "sagemaker.amazonaws.com/job-max-retry-count": "2",
}
PYTORCHJOB_CRD = Path(__file__).with_name("pytorchjob-crd.yaml")
Pods = Callable[[dict[str, Any], str, list[Node]], list[str]]


def start_pods(
    core: client.CoreV1Api,
    namespace: str,
    ref: dict[str, Any],
    placed: Mapping[str, tuple[Node, Mapping[str, str]]],
) -> list[str]:
    """The job ``ref``'s pods, by name: each bound to its node with its labels, running."""
    for name, (node, labels) in placed.items():
        bind_pod(core, namespace, name, node.name, labels=labels, owner=ref)
    for name in placed:
        wait_for(lambda n=name: running(core, namespace, n), what=f"{name} running")  # type: ignore[misc]
    return list(placed)


@pytest.fixture
def pods(core: client.CoreV1Api, namespace: str) -> Pods:
    """One running pod of the job ``ref`` on each node, labelled as its controller does."""

    def make(ref: dict[str, Any], label: str, nodes: list[Node]) -> list[str]:
        placed = {f"{ref['name']}-{i}": (n, {label: ref["name"]}) for i, n in enumerate(nodes)}
        return start_pods(core, namespace, ref, placed)

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


@pytest.fixture(scope="module")
def pytorchjobs(admin: client.ApiClient) -> client.CustomObjectsApi:
    """Kubeflow's PyTorchJob CRD on the session's apiserver, served (once; it stays)."""
    crd = yaml.safe_load(PYTORCHJOB_CRD.read_text())
    try:
        client.ApiextensionsV1Api(admin).create_custom_resource_definition(crd)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    custom = client.CustomObjectsApi(admin)
    group, version, plural = PYTORCHJOB_API

    def served() -> bool:
        try:
            custom.list_cluster_custom_object(group, version, plural)
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    wait_for(served, what="the PyTorchJob CRD served")
    return custom


def pytorchjob(
    custom: client.CustomObjectsApi,
    namespace: str,
    name: str,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PyTorchJob with a master and a worker, as a user applies it; its ownerReference."""
    group, version, plural = PYTORCHJOB_API
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "trainer:1"}]}},
    }
    body = {
        "apiVersion": f"{group}/{version}",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
    }
    made = custom.create_namespaced_custom_object(group, version, namespace, plural, body)
    return {
        "apiVersion": body["apiVersion"],
        "kind": "PyTorchJob",
        "name": name,
        "uid": made["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def trainer_pods(
    core: client.CoreV1Api, namespace: str, ref: dict[str, Any], master: Node, worker: Node
) -> list[str]:
    """The master and worker pods, named and labelled as the training operator (v1.8) makes
    them."""
    name = ref["name"]

    def labels(replica: str) -> dict[str, str]:
        return {
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/replica-type": replica,
            "training.kubeflow.org/replica-index": "0",
        }

    placed = {
        f"{name}-master-0": (
            master,
            {**labels("master"), "training.kubeflow.org/job-role": "master"},
        ),
        f"{name}-worker-0": (worker, labels("worker")),
    }
    return start_pods(core, namespace, ref, placed)


def pytorchjob_notes(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, str]:
    group, version, plural = PYTORCHJOB_API
    raw = custom.get_namespaced_custom_object(group, version, namespace, plural, name)
    return dict(raw["metadata"].get("annotations") or {})


def test_an_opted_in_pytorchjob_restarts_whole_and_fails_past_its_retries(
    *,
    invoke: Invoke,
    pytorchjobs: client.CustomObjectsApi,
    core: client.CoreV1Api,
    namespace: str,
    new_node: Callable[..., Node],
) -> None:
    sick, other = new_node(), new_node()
    llama = pytorchjob(pytorchjobs, namespace, "llama-70b", OPTED_IN)
    bert = pytorchjob(pytorchjobs, namespace, "bert-base")
    llama_pods = trainer_pods(core, namespace, llama, sick, other)
    bert_pods = trainer_pods(core, namespace, bert, sick, other)

    found = invoke({"op": "jobs_on_node", "node": sick.name})

    assert [(j["kind"], j["name"], j["uid"]) for j in found["jobs"]] == [
        ("PyTorchJob", "llama-70b", llama["uid"])
    ]

    done = resume(invoke, found["jobs"], sick, "decision-5")

    assert done["resumed"] == [f"{namespace}/llama-70b"]
    assert done["tell"] is False
    # The master on the repaired node and the worker on the healthy one both go, so the
    # training operator recreates every rank; the job that did not opt in keeps its pods.
    for pod in llama_pods:
        wait_for(lambda p=pod: not exists(core, namespace, p), what=f"{pod} deleted")  # type: ignore[misc]
    assert all(exists(core, namespace, p) for p in bert_pods)
    assert pytorchjob_notes(pytorchjobs, namespace, "llama-70b")[JOB_RESTARTS_ANNOTATION] == (
        "1 (1 full)"
    )
    assert JOB_RESTARTS_ANNOTATION not in pytorchjob_notes(pytorchjobs, namespace, "bert-base")
    events = core.list_namespaced_event(namespace).items
    told = [e for e in events if e.involved_object.kind == "PyTorchJob"]
    assert [(e.reason, e.involved_object.kind, e.involved_object.uid) for e in told] == [
        ("NodeMedicJobResumed", "PyTorchJob", llama["uid"])
    ]

    # The operator's new pods are on healthy nodes; the next repair finds the one retry spent.
    again = trainer_pods(core, namespace, llama, other, other)
    later = resume(invoke, found["jobs"], sick, "decision-6")

    assert later["failed"] == [f"{namespace}/llama-70b"]
    assert later["tell"] is True
    assert JOB_FAILED_ANNOTATION in pytorchjob_notes(pytorchjobs, namespace, "llama-70b")
    assert all(exists(core, namespace, p) for p in again), "failing a job deletes none of its pods"
    assert "NodeMedicJobFailed" in reasons(core, namespace, "llama-70b")


def test_a_gpu_level_rung_finds_only_the_jobs_holding_its_gpu(
    invoke: Invoke, admin: client.ApiClient, core: client.CoreV1Api, namespace: str, node: Node
) -> None:
    """A GPU reset drains only the pods on its GPU: a job on the node's other GPUs is never
    stopped, so it is not one to restart."""
    on_gpu = owner(admin, namespace, "Job", "llama-sft", OPTED_IN)
    beside = owner(admin, namespace, "Job", "llama-eval", OPTED_IN)
    for ref in (on_gpu, beside):
        name = f"{ref['name']}-0"
        bind_pod(core, namespace, name, node.name, owner=ref, limits={"nvidia.com/gpu": "1"})
        wait_for(partial(holds, core, node.name, f"{namespace}/{name}"), what="its GPU recorded")
    gpu = device_record(core, node.name)[f"{namespace}/llama-sft-0"][0]

    whole = invoke({"op": "jobs_on_node", "node": node.name})
    one_gpu = invoke({"op": "jobs_on_node", "node": node.name, "devices": [gpu]})

    assert sorted(j["name"] for j in whole["jobs"]) == ["llama-eval", "llama-sft"]
    assert [j["name"] for j in one_gpu["jobs"]] == ["llama-sft"]
