"""The storm end to end: 60 % of the nodes report a fatal fault at once. The breaker lets
at most its limit into remediation together, holds the rest, and lets them proceed as
slots free up, up to the group's replacements per hour: those are replaced and the job
runs again; the rest trip the cluster's breaker and stay held, their nodes untouched."""

from __future__ import annotations

import pytest

from nodemedic.local.scenarios import Result
from nodemedic.local.timeline import FaultRun
from nodemedic.local.watch import NodeSeen
from nodemedic.local.world import World
from tests.support.e2e import group_after_replacements, run_scenario, workers_running_again

pytestmark = [pytest.mark.kube, pytest.mark.slow]
LIMIT = 2  # max_parallel 2, and 20 % of 8 nodes rounds to 1 + 1
REPLACED = 3  # replacements_per_hour, the default


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    return run_scenario(world, "storm")


def replaced(result: Result) -> list[FaultRun]:
    return [r for r in result.runs if r.outcome == "replaced"]


def began(result: Result) -> float:
    return min(r.written_at for r in result.runs)


def most_cordoned_at_once(seen: list[NodeSeen], since: float) -> int:
    """Replays the Node watch from ``since``: the most nodes cordoned at one moment."""
    cordoned: set[str] = set()
    most = 0
    for event in sorted((s for s in seen if s.at >= since), key=lambda s: s.at):
        if event.unschedulable and event.event != "DELETED":
            cordoned.add(event.name)
        else:
            cordoned.discard(event.name)
        most = max(most, len(cordoned))
    return most


def test_five_of_eight_nodes_fail_three_are_replaced_two_held(world: World, result: Result) -> None:
    assert not result.problems
    assert len(result.runs) == 5
    assert len(replaced(result)) == REPLACED
    members = group_after_replacements(world, {r.machine.instance_id for r in replaced(result)})
    assert len(members) == 8
    assert {m["LifecycleState"] for m in members.values()} == {"InService"}
    assert {m["HealthStatus"] for m in members.values()} == {"Healthy"}
    for run in result.runs:
        if run.outcome != "replaced":
            # Still held when the scenario ends (the demo holds for breaker_hold 120 s).
            assert not world.machine_events(run.machine.instance_id, "unhealthy")
            assert world.node(run.machine.node) is not None
            assert run.machine.instance_id in members
            continue
        assert run.ok, run.problems
        assert run.machine.instance_id not in members
        assert world.instance_state(run.machine.instance_id) == "terminated"
        assert world.node(run.machine.node) is None


def test_the_breaker_never_let_more_than_its_limit_out(world: World, result: Result) -> None:
    assert result.breaker is not None
    assert result.breaker.limit == LIMIT
    assert most_cordoned_at_once(world.watch.seen, began(result)) == LIMIT
    assert result.breaker.most == LIMIT
    # And gave every slot back.
    breaker = world.aws("dynamodb").get_item(
        TableName=world.ledger_table,
        Key={"pk": {"S": "group#accelerated"}, "sk": {"S": "breaker"}},
        ConsistentRead=True,
    )["Item"]
    assert "holders" not in breaker or breaker["holders"]["SS"] == []


def test_the_rest_were_held_and_one_admitted_later(world: World, result: Result) -> None:
    ours = {r.machine.instance_id for r in result.runs}
    mail = [m for m in world.inbox.messages() if m.instance_id in ours]
    held = [m for m in mail if m.outcome == "held" and "seconds" not in m.body]
    assert len(held) == len(result.runs) - LIMIT
    for message in held:
        assert message.subject == f"nodemedic held: {message.instance_id}"
        assert "breaker holds replace" in message.body["summary"]
    # One held got a slot as one freed and was replaced; the rest hit the hourly limit.
    held_ids = {m.instance_id for m in held}
    assert len([r for r in replaced(result) if r.machine.instance_id in held_ids]) == (
        REPLACED - LIMIT
    )
    decisions = {r.decision_id for r in result.runs}
    executions = world.aws("stepfunctions").list_executions(
        stateMachineArn=world.state_machine_arn
    )["executions"]
    statuses = {e["name"]: e["status"] for e in executions if e["name"] in decisions}
    assert [statuses[r.decision_id or ""] for r in replaced(result)] == ["SUCCEEDED"] * REPLACED
    assert set(statuses.values()) <= {"SUCCEEDED", "RUNNING"}


def test_the_training_job_runs_again_on_healthy_nodes(world: World, result: Result) -> None:
    faulty = {r.machine.node for r in replaced(result)}
    placed = workers_running_again(world, timeout=15)
    assert not faulty & set(placed)
