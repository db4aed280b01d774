"""Issue 14's proof, end to end: ``nodemedic demo --scenario jobs`` on the local world.
Simulated training runs as real ``batch/v1`` Jobs (the kube-controller-manager's Job
controller makes their pods), its stdout reaches Container Insights' application group in
Fluent Bit's record shape, and the job monitor's rules (HyperPod's schema) act on it; then a
node is replaced under an opted-in job, which resumes from its checkpoint."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from nodemedic.contracts.jobs import (
    JOB_FAILED_ANNOTATION,
    JOB_RESTARTS_ANNOTATION,
    application_log_group,
)
from tests.support.e2e import run_scenario
from world.pace import MAX_PACE
from world.scenarios.jobs import JobsView
from world.scenarios.kit import Result
from world.scenarios.registry import SETTINGS
from world.scenarios.training import NAMESPACE
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
WORLD_SETTINGS = demo_settings(**SETTINGS["jobs"])


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    return run_scenario(world, "jobs")


def restarts(world: World, job: str) -> str | None:
    found = client.BatchV1Api(world.api).read_namespaced_job(job, NAMESPACE)
    return (found.metadata.annotations or {}).get(JOB_RESTARTS_ANNOTATION)


def test_every_outcome_matches(result: Result) -> None:
    assert result.ok, result.problems


def test_a_stalled_log_and_a_missing_first_line_restart_their_jobs(
    world: World, result: Result
) -> None:
    view: JobsView = result.jobs
    assert restarts(world, "stall") == "1 (0 full)"
    assert restarts(world, "nostart") == "1 (0 full)"
    assert any("'Progress': job hanging" in e for e in view.events["stall"])
    assert any("'FirstStep': job hanging" in e for e in view.events["nostart"])
    # The silence was caught within a demo schedule period (2 s) and a pass or two, at the
    # world's slowest pace: the pace sampled when the jobs began may be a quieter moment's.
    assert 0 <= view.lateness[0] <= 6 * MAX_PACE


def test_five_losses_over_two_restart_a_job_and_four_do_not(world: World, result: Result) -> None:
    assert restarts(world, "spike5") == "1 (0 full)"
    assert restarts(world, "spike4") is None
    assert "spike4" not in result.jobs.events


def test_a_stop_pattern_silences_its_rule(world: World, result: Result) -> None:
    assert restarts(world, "evaluate") is None


def test_the_restart_policy_maxima_fail_a_job_and_keep_its_pods(
    world: World, result: Result
) -> None:
    job = client.BatchV1Api(world.api).read_namespaced_job("diverge", NAMESPACE)
    notes = job.metadata.annotations or {}
    assert notes[JOB_RESTARTS_ANNOTATION] == "3 (1 full)"
    assert "job slow" in notes[JOB_FAILED_ANNOTATION]
    reasons = [e.split(":")[0] for e in result.jobs.events["diverge"]]
    assert reasons == [
        "NodeMedicPodsRestarted",
        "NodeMedicJobRestarted",
        "NodeMedicPodsRestarted",
        "NodeMedicJobFailed",
    ]


def test_an_opted_in_job_resumes_from_its_checkpoint_after_its_node_is_replaced(
    world: World, result: Result
) -> None:
    (run,) = result.runs
    assert run.outcome == "replaced"
    assert restarts(world, "resume") is not None
    assert restarts(world, "plain") is None
    assert any(e.startswith("NodeMedicJobResumed") for e in result.jobs.events["resume"])


def test_training_lines_reach_container_insights_as_fluent_bit_ships_them(world: World) -> None:
    logs = world.aws("logs")
    group = application_log_group(world.settings.name)
    streams = logs.describe_log_streams(logGroupName=group)["logStreams"]
    name = next(
        s["logStreamName"] for s in streams if f"_{NAMESPACE}_trainer-" in s["logStreamName"]
    )
    assert ".ec2.internal-application.var.log.containers." in name
    record = json.loads(
        logs.get_log_events(logGroupName=group, logStreamName=name)["events"][0]["message"]
    )
    assert set(record) == {"log", "stream", "time", "kubernetes"}
    assert record["kubernetes"]["namespace_name"] == NAMESPACE
    assert record["kubernetes"]["container_name"] == "trainer"
    assert "job-name" in record["kubernetes"]["labels"]
