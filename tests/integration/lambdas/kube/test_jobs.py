"""The job monitor Lambda end to end: Container Insights deliveries of a real batch/v1 Job's
pods (moto as the ledger, the real kube-apiserver as the cluster, acting with the
job monitor's own RBAC), a verdict restarting the job, and a job failed once its retries are
spent."""

from __future__ import annotations

import fnmatch
import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client
from moto import mock_aws

from lambdas.jobs.handler import handler
from lambdas.subscription import MalformedPayload
from nodemedic.contracts.env import ENV_CLUSTER, ENV_JOB_BREAKER, ENV_LEDGER_TABLE, ENV_TOPIC_ARN
from nodemedic.contracts.jobs import (
    JOB_BREAKER_SK,
    JOB_FAILED_ANNOTATION,
    JOB_LEADING_KEYS,
    JOB_LINES_HEARD_SK,
    JOB_RESTARTS_ANNOTATION,
    LOG_MONITORING_ANNOTATION,
    RESTARTS_SK,
    RUN_POLICY_ANNOTATION,
)
from tests.support.kube import Node, bind_pod, exists, running, wait_for
from tests.support.lambda_context import lambda_context
from tests.support.payloads import delivery
from tests.support.tables import create_ledger_table
from world.kube.kubeapi import LocalCluster

pytestmark = pytest.mark.kube
CONTEXT = lambda_context("jobs", memory_mb=256, timeout_seconds=60)
TABLE = "ledger"
LOSS_RULES = json.dumps(
    [
        {
            "name": "LossSpikeDetection",
            "logPattern": r".*training_loss_step (\S+).*",
            "metricThreshold": 2.0,
            "operator": "gt",
            "metricEvaluationDataPoints": 5,
        }
    ]
)


@pytest.fixture
def aws(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # As its own group: every test also checks that the job monitor's role suffices.
    monkeypatch.setenv("KUBECONFIG", str(cluster.job_monitor_kubeconfig))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv(ENV_LEDGER_TABLE, TABLE)
    monkeypatch.setenv(ENV_CLUSTER, "demo")
    with mock_aws():
        create_ledger_table(TABLE)
        topic = boto3.client("sns").create_topic(Name="nodemedic-demo")["TopicArn"]
        queue = boto3.client("sqs").create_queue(QueueName="mail")["QueueUrl"]
        arn = boto3.client("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        boto3.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        monkeypatch.setenv(ENV_TOPIC_ARN, topic)
        yield


def mails() -> list[str]:
    """The subjects of the notifications sent so far (read once)."""
    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName="mail")["QueueUrl"]
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"])["Subject"] for m in got]


Job = Callable[..., tuple[str, list[str]]]


@pytest.fixture
def other_namespace(core: client.CoreV1Api) -> Iterator[str]:
    """A second team's namespace."""
    name = f"team-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


@pytest.fixture
def job(admin: client.ApiClient, core: client.CoreV1Api, namespace: str, node: Node) -> Job:
    """A Job with the annotations given and two running pods it owns."""

    def make(
        name: str, annotations: dict[str, str], where: str = namespace
    ) -> tuple[str, list[str]]:
        template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "t"}]}}
        made = client.BatchV1Api(admin).create_namespaced_job(
            where,
            {
                "metadata": {"name": name, "annotations": annotations},
                "spec": {"template": template},
            },
        )
        uid = made.metadata.uid
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": uid,
            "controller": True,
        }
        pods = [f"{name}-{i}" for i in range(2)]
        for pod in pods:
            bind_pod(core, where, pod, node.name, labels={"job-name": name}, owner=owner)
        for pod in pods:
            wait_for(lambda p=pod: running(core, where, p), what=f"{pod} running")  # type: ignore[misc]
        return name, pods

    return make


def replacement(
    core: client.CoreV1Api, admin: client.ApiClient, namespace: str, node: Node, name: str
) -> str:
    """A new running pod of the job, as its controller makes one after a restart: a line is
    the job's only from a pod it controls."""
    uid = client.BatchV1Api(admin).read_namespaced_job(name, namespace).metadata.uid
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid, "controller": True}
    pod = f"{name}-new"
    bind_pod(core, namespace, pod, node.name, labels={"job-name": name}, owner=owner)
    wait_for(lambda: running(core, namespace, pod), what=f"{pod} running")
    return pod


def losses(*values: float) -> list[str]:
    return [f"[train.py:88] step {i} training_loss_step {v} lr 3e-4" for i, v in enumerate(values)]


def events(core: client.CoreV1Api, namespace: str, job: str) -> list[str]:
    found = core.list_namespaced_event(namespace).items
    return [e.reason for e in found if e.involved_object.name == job]


def job_annotations(admin: client.ApiClient, namespace: str, job: str) -> dict[str, str]:
    read = client.BatchV1Api(admin).read_namespaced_job(job, namespace)
    return dict(read.metadata.annotations or {})


@pytest.mark.usefixtures("aws")
def test_a_loss_spike_restarts_the_jobs_pods_then_fails_the_job_past_its_retries(
    job: Job, core: client.CoreV1Api, admin: client.ApiClient, namespace: str, node: Node
) -> None:
    name, pods = job(
        "llama",
        {LOG_MONITORING_ANNOTATION: LOSS_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 1"},
    )
    # Four data points beyond the threshold are not enough.
    quiet = handler(delivery(namespace, name, pods[0], losses(2.5, 3.1, 2.2, 9.0, 1.0)), CONTEXT)
    assert quiet["acted"] == [] and all(exists(core, namespace, p) for p in pods)

    spike = delivery(namespace, name, pods[1], losses(2.5, 3.1, 2.2, 9.0, 4.4))
    result = handler(spike, CONTEXT)
    [acted] = result["acted"]
    assert (acted["verdict"], acted["action"], acted["deleted"]) == ("slow", "restart-pods", pods)
    wait_for(lambda: not any(exists(core, namespace, p) for p in pods), what="pods deleted")
    assert job_annotations(admin, namespace, name)[JOB_RESTARTS_ANNOTATION] == "1 (0 full)"
    assert events(core, namespace, name) == ["NodeMedicPodsRestarted"]

    # The same delivery again is evidence of the run before the restart: no second restart.
    assert handler(spike, CONTEXT)["acted"] == []
    assert events(core, namespace, name) == ["NodeMedicPodsRestarted"]
    new = replacement(core, admin, namespace, node, name)
    again = handler(delivery(namespace, name, new, losses(5, 5, 5, 5, 5)), CONTEXT)
    assert [a["action"] for a in again["acted"]] == ["fail"]
    noted = job_annotations(admin, namespace, name)
    assert "training_loss_step 5" in noted[JOB_FAILED_ANNOTATION]
    assert events(core, namespace, name) == ["NodeMedicPodsRestarted", "NodeMedicJobFailed"]
    # Failed is final: more evidence does nothing more.
    assert handler(delivery(namespace, name, new, losses(9, 9, 9, 9, 9)), CONTEXT)["acted"] == []
    # Every item it wrote (rules, restarts, breaker, heard) is in the partitions its IAM role's
    # dynamodb:LeadingKeys condition allows, which moto does not enforce.
    written = boto3.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert {i["sk"]["S"] for i in written} >= {JOB_BREAKER_SK, JOB_LINES_HEARD_SK, RESTARTS_SK}
    assert all(fnmatch.fnmatchcase(i["pk"]["S"], JOB_LEADING_KEYS) for i in written)


@pytest.mark.usefixtures("aws")
def test_the_schedule_finds_a_job_whose_first_line_never_came(
    job: Job, core: client.CoreV1Api, namespace: str
) -> None:
    rules = json.dumps(
        [{"name": "JobStart", "logPattern": ".*Experiment.*", "expectedStartCutOffInSeconds": 1}]
    )
    name, pods = job(
        "silent", {LOG_MONITORING_ANNOTATION: rules, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"}
    )
    time.sleep(2.1)  # past the cut-off, counted from the job's creation (whole seconds)
    scheduled = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
    acted = [a for a in handler(scheduled, CONTEXT)["acted"] if a["job"] == f"{namespace}/{name}"]
    assert [(a["verdict"], a["action"]) for a in acted] == [("hanging", "restart-pods")]
    wait_for(lambda: not any(exists(core, namespace, p) for p in pods), what="pods deleted")


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (
            '[{name: loss, logPattern: "loss (\\\\S+)", metricThreshold: 2, operator: greater}]',
            "operator must be one of gt, gteq, lt, lteq, eq",
        ),
        ('[{name: twice, logPattern: "(step) \\\\1"}]', "RE2 runs in linear time"),
    ],
)
def test_an_invalid_rule_is_an_event_on_the_job_and_touches_nothing(
    job: Job, core: client.CoreV1Api, namespace: str, bad: str, says: str
) -> None:
    name, pods = job("typo", {LOG_MONITORING_ANNOTATION: bad})
    assert handler(delivery(namespace, name, pods[0], losses(9)), CONTEXT)["acted"] == []
    assert events(core, namespace, name) == ["NodeMedicInvalidLogMonitoring"]
    [message] = [e.message for e in core.list_namespaced_event(namespace).items]
    assert says in message
    assert all(exists(core, namespace, p) for p in pods)


@pytest.mark.usefixtures("aws")
def test_a_delivery_from_another_log_group_goes_to_the_dead_letter_queue() -> None:
    nodes = delivery("ns", "job", "pod", ["x"], group="/nodemedic/demo/nodes")
    with pytest.raises(MalformedPayload, match="no Container Insights application group"):
        handler(nodes, CONTEXT)
    with pytest.raises(MalformedPayload):
        handler({"awslogs": {"data": "bm90IGd6aXA="}}, CONTEXT)


FAULT_RULES = json.dumps([{"name": "Nccl", "logPattern": ".*NCCL error.*", "faultOnMatch": True}])
SCHEDULED = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def published(out: str, metric: str) -> list[tuple[str, float]]:
    """(job, value) of each EMF record of ``metric`` the handler printed."""
    found = []
    for line in out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            record = json.loads(line)
            if metric in record:
                value = record[metric]  # a list when one record carries several points
                found.append((record["Job"], float(value[0] if isinstance(value, list) else value)))
    return found


@pytest.mark.usefixtures("aws")
def test_restart_latency_is_published_once_when_the_new_pods_run(
    job: Job,
    *,
    core: client.CoreV1Api,
    admin: client.ApiClient,
    namespace: str,
    node: Node,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, pods = job(
        "latent",
        {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 2"},
    )
    key = f"{namespace}/{name}"
    [acted] = handler(delivery(namespace, name, pods[0], ["NCCL error: unhandled"]), CONTEXT)[
        "acted"
    ]
    assert acted["action"] == "restart-pods"
    wait_for(lambda: not any(exists(core, namespace, p) for p in pods), what="pods deleted")
    assert key not in handler(SCHEDULED, CONTEXT)["running_again"], "no pod runs yet"

    uid = client.BatchV1Api(admin).read_namespaced_job(name, namespace).metadata.uid
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid, "controller": True}
    time.sleep(1.1)  # the new pods' Ready times are whole seconds
    for pod in (f"{name}-new-0", f"{name}-new-1"):
        bind_pod(core, namespace, pod, node.name, labels={"job-name": name}, owner=owner)
        wait_for(lambda p=pod: running(core, namespace, p), what=f"{pod} running")  # type: ignore[misc]
    capsys.readouterr()
    latency = handler(SCHEDULED, CONTEXT)["running_again"][key]
    assert 0.0 < latency < 30.0
    assert published(capsys.readouterr().out, "RestartLatencySeconds") == [(key, latency)]
    assert key not in handler(SCHEDULED, CONTEXT)["running_again"], "published once"


CUT_OFF = 10
"""The job's start cut-off: the handler's look right after the new pods run must come within
it (Running times are whole seconds) on a busy machine too."""
START_RULES = json.dumps(
    [
        {"name": "Nccl", "logPattern": ".*NCCL error.*", "faultOnMatch": True},
        {"name": "Start", "logPattern": ".*loss.*", "expectedStartCutOffInSeconds": CUT_OFF},
    ]
)


@pytest.mark.usefixtures("aws")
def test_a_restarted_runs_start_cut_off_counts_from_its_pods_running(
    job: Job, *, core: client.CoreV1Api, admin: client.ApiClient, namespace: str, node: Node
) -> None:
    name, pods = job(
        "backoff",
        {LOG_MONITORING_ANNOTATION: START_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"},
    )
    lines = ["step 1 loss 1.0", "NCCL error: unhandled"]
    [acted] = handler(delivery(namespace, name, pods[0], lines), CONTEXT)["acted"]
    assert (acted["rule"], acted["action"]) == ("Nccl", "restart-pods")
    wait_for(lambda: not any(exists(core, namespace, p) for p in pods), what="pods deleted")
    # The Job controller's failure backoff: no pod for longer than the cut-off.
    time.sleep(CUT_OFF + 1)
    assert handler(SCHEDULED, CONTEXT)["acted"] == [], "no hang before the pods exist"

    uid = client.BatchV1Api(admin).read_namespaced_job(name, namespace).metadata.uid
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid, "controller": True}
    for pod in (f"{name}-new-0", f"{name}-new-1"):
        bind_pod(core, namespace, pod, node.name, labels={"job-name": name}, owner=owner)
        wait_for(lambda p=pod: running(core, namespace, p), what=f"{pod} running")  # type: ignore[misc]
    assert handler(SCHEDULED, CONTEXT)["acted"] == [], "the cut-off counts from now on"
    time.sleep(CUT_OFF + 0.5)
    [hung] = handler(SCHEDULED, CONTEXT)["acted"]
    assert (hung["rule"], hung["verdict"]) == ("Start", "hanging")


@pytest.mark.usefixtures("aws")
def test_many_jobs_of_a_namespace_tripping_at_once_hold_only_that_namespace(
    job: Job,
    core: client.CoreV1Api,
    namespace: str,
    other_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_JOB_BREAKER, json.dumps({"restarts_per_window": 2}))
    notes = {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"}
    made = [job(f"wave-{i}", notes) for i in range(4)]
    actions = []
    for name, pods in made:
        [acted] = handler(delivery(namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
        actions.append(acted["action"])
    assert actions == ["restart-pods", "restart-pods", "held", "held"]
    assert mails() == [f"nodemedic job breaker tripped: namespace {namespace} of cluster demo"]
    for name, pods in made[2:]:
        assert all(exists(core, namespace, p) for p in pods)
        assert events(core, namespace, name) == ["NodeMedicRestartHeld"]
    # Still tripped: a new verdict is held too, and tells nobody again.
    name, pods = made[2]
    again = handler(delivery(namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    assert [a["action"] for a in again] == ["held"] and mails() == []
    # Another team's job is not held by this namespace's breaker.
    name, pods = job("elsewhere", notes, other_namespace)
    [acted] = handler(delivery(other_namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    assert acted["action"] == "restart-pods"


@pytest.mark.usefixtures("aws")
def test_the_clusters_cap_holds_the_namespaces_that_restarted_not_another_teams_first(
    job: Job,
    core: client.CoreV1Api,
    namespace: str,
    other_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One tenant's two namespaces fill the cap: their next restarts are held, another
    team's first restart is not."""
    limits = {"restarts_per_window": 5, "cluster_restarts_per_window": 2}
    monkeypatch.setenv(ENV_JOB_BREAKER, json.dumps(limits))
    notes = {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"}
    made = [
        (where, *job(f"cap-{i}", notes, where))
        for i, where in enumerate((namespace, other_namespace, namespace, other_namespace))
    ]
    actions = []
    for where, name, pods in made:
        [acted] = handler(delivery(where, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
        actions.append(acted["action"])
    assert actions == ["restart-pods", "restart-pods", "held", "held"]
    assert mails() == ["nodemedic job breaker tripped: cluster demo"]
    third = f"team-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": third}})
    try:
        name, pods = job("alice-llama", notes, third)
        [acted] = handler(delivery(third, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    finally:
        core.delete_namespace(third)
    assert acted["action"] == "restart-pods"


@pytest.mark.usefixtures("aws")
def test_a_silent_log_group_holds_the_schedules_verdicts(
    job: Job, core: client.CoreV1Api, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log pipe outage looks like every job hanging at once: nothing is restarted."""
    monkeypatch.setenv(ENV_JOB_BREAKER, json.dumps({"silence": 1}))
    handler(delivery(namespace, "other", "other-0", ["the pipe works"]), CONTEXT)
    rules = json.dumps(
        [{"name": "Step", "logPattern": ".*step.*", "expectedStartCutOffInSeconds": 1}]
    )
    name, pods = job(
        "quiet", {LOG_MONITORING_ANNOTATION: rules, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"}
    )
    time.sleep(2.1)
    acted = [a for a in handler(SCHEDULED, CONTEXT)["acted"] if a["job"] == f"{namespace}/{name}"]
    assert [(a["verdict"], a["action"]) for a in acted] == [("hanging", "held")]
    assert all(exists(core, namespace, p) for p in pods)
    assert mails() == ["nodemedic job breaker tripped: cluster demo"]


@pytest.mark.usefixtures("aws")
def test_a_monitor_only_cluster_restarts_no_job(
    job: Job, core: client.CoreV1Api, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_JOB_BREAKER, json.dumps({"monitor_only": True}))
    name, pods = job(
        "watched",
        {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"},
    )
    [acted] = handler(delivery(namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    assert acted["action"] == "held"
    assert all(exists(core, namespace, p) for p in pods)
    assert events(core, namespace, name) == ["NodeMedicRestartHeld"]


def emf(out: str) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(metric, dimension names, record) of each EMF record the handler printed."""
    found: list[tuple[str, list[str], dict[str, Any]]] = []
    for line in out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            record = json.loads(line)
            for directive in record["_aws"]["CloudWatchMetrics"]:
                for dimensions in directive["Dimensions"]:
                    found.extend((m["Name"], dimensions, record) for m in directive["Metrics"])
    return found


@pytest.mark.usefixtures("aws")
def test_a_held_verdict_is_counted_per_job_for_the_dashboard(
    job: Job,
    *,
    core: client.CoreV1Api,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JobRestartsHeld, with exactly the dimensions the dashboard reads (the deployed
    function's service name must not add one)."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "nodemedic-jobs")
    monkeypatch.setenv(ENV_JOB_BREAKER, json.dumps({"monitor_only": True}))
    name, pods = job(
        "holdme",
        {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"},
    )
    capsys.readouterr()
    [acted] = handler(delivery(namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    assert acted["action"] == "held" and all(exists(core, namespace, p) for p in pods)
    job_metrics = [(m, d, r) for m, d, r in emf(capsys.readouterr().out) if "Job" in r]
    assert [(m, d, r["Cluster"], r["Job"]) for m, d, r in job_metrics] == [
        ("JobRestartsHeld", ["Cluster", "Job"], "demo", f"{namespace}/{name}")
    ]


@pytest.mark.usefixtures("aws")
def test_restarts_and_failures_are_published_with_exactly_cluster_and_job(
    job: Job,
    *,
    core: client.CoreV1Api,
    admin: client.ApiClient,
    namespace: str,
    node: Node,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The JobsFailed alarm and the dashboard query SCHEMA("NodeMedic", "Cluster", "Job"):
    a metric with one more dimension (Powertools' service) is one they never see."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "nodemedic-jobs")
    name, pods = job(
        "counted",
        {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 1"},
    )
    capsys.readouterr()
    handler(delivery(namespace, name, pods[0], ["NCCL error: first"]), CONTEXT)
    # The second fault comes from the run after the restart: a line from a deleted pod is
    # evidence of the run before it, and counts for nothing.
    wait_for(lambda: not any(exists(core, namespace, p) for p in pods), what="pods deleted")
    new = replacement(core, admin, namespace, node, name)
    handler(delivery(namespace, name, new, ["NCCL error: again"]), CONTEXT)
    job_metrics = [(m, d) for m, d, r in emf(capsys.readouterr().out) if "Job" in r]
    assert job_metrics == [
        ("JobsRestarted", ["Cluster", "Job"]),
        ("FaultDetectionLatencySeconds", ["Cluster", "Job"]),
        ("JobsFailed", ["Cluster", "Job"]),
        ("FaultDetectionLatencySeconds", ["Cluster", "Job"]),
    ]


@pytest.mark.usefixtures("aws")
def test_a_pod_labelled_as_another_job_does_not_feed_its_rules(
    job: Job, core: client.CoreV1Api, admin: client.ApiClient, namespace: str, node: Node
) -> None:
    """Any pod in the namespace can carry ``job-name: <victim>``; only the job's own pods
    (its controller owner reference) are its evidence."""
    notes = {LOG_MONITORING_ANNOTATION: FAULT_RULES, RUN_POLICY_ANNOTATION: "jobMaxRetryCount: 3"}
    name, pods = job("victim", notes)
    other, _ = job("other", {})
    other_uid = client.BatchV1Api(admin).read_namespaced_job(other, namespace).metadata.uid
    owned = {"apiVersion": "batch/v1", "kind": "Job", "name": other, "uid": other_uid}
    owned |= {"controller": True}
    bind_pod(core, namespace, "impostor", node.name, labels={"job-name": name})
    bind_pod(core, namespace, "sibling", node.name, labels={"job-name": name}, owner=owned)
    for pod in ("impostor", "sibling"):
        wait_for(lambda p=pod: running(core, namespace, p), what=f"{pod} running")  # type: ignore[misc]
        assert handler(delivery(namespace, name, pod, ["NCCL error"]), CONTEXT)["acted"] == []
    assert all(exists(core, namespace, p) for p in pods)
    assert events(core, namespace, name) == []
    [acted] = handler(delivery(namespace, name, pods[0], ["NCCL error"]), CONTEXT)["acted"]
    assert (acted["job"], acted["action"]) == (f"{namespace}/{name}", "restart-pods")


@pytest.mark.usefixtures("aws")
def test_a_dma_abort_in_a_jobs_output_asks_for_its_nodes_deep_check_and_touches_nothing(
    admin: client.ApiClient, core: client.CoreV1Api, namespace: str, node: Node, job: Job
) -> None:
    name, pods = job("neuron-train", {})
    abort = "812:831 ERROR TDRV:exec [MLA 0][NC 1] DMA TX engine 0 is in an abort state"
    told = [
        handler(delivery(namespace, name, pod, ["step 1", abort]), CONTEXT)["node_evidence"]
        for pod in pods
    ]
    # Both ranks print it: the node is told once, from the first pod's delivery.
    assert [[e["node"] for e in t] for t in told] == [[node.name], []]
    on_node = [
        e
        for e in client.CoreV1Api(admin).list_namespaced_event("default").items
        if e.involved_object.kind == "Node" and e.involved_object.name == node.name
    ]
    assert [(e.reason, e.type) for e in on_node] == [("NodeMedicDeepCheckRequested", "Warning")]
    assert "DMA TX engine 0 is in an abort state" in on_node[0].message
    assert mails() == [f"nodemedic demo: NodeMedicDeepCheckRequested on {node.name}"]
    # A tenant's line is no proof: the node keeps its work and its schedule.
    read = client.CoreV1Api(admin).read_node(node.name)
    assert not read.spec.unschedulable
    assert not [t for t in read.spec.taints or [] if t.key.startswith("nodemedic.io/")]
    assert all(running(core, namespace, pod) for pod in pods)
