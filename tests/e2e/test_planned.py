"""A repair AWS announces, and a person who approves, end to end (``nodemedic demo
--scenario planned``): AWS Health's retirement notice put on the event bus replaces its node
before the deadline, a Neuron DMA error's replacement waits for ``nodemedic approve``, and
the ledger names who approved each; no other node is touched."""

from __future__ import annotations

import pytest

from nodemedic.contracts.ledger import DECISION_SK_PREFIX
from nodemedic.remediate.breaker import plain_item
from tests.support.e2e import run_scenario
from world.scenarios.kit import Result
from world.scenarios.planned import NoticeRun
from world.scenarios.registry import SETTINGS
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
WORLD_SETTINGS = demo_settings(**SETTINGS["planned"])
APPROVER = "arn:aws:sts::123456789012:user/moto"
"""Who moto's STS says the caller of ``nodemedic approve`` is."""


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    return run_scenario(world, "planned")


def test_the_noticed_node_is_replaced_before_its_deadline(result: Result) -> None:
    assert result.ok, (result.problems, [(r.machine.node, r.problems) for r in result.runs])
    notice, fault = result.runs
    assert isinstance(notice, NoticeRun)
    assert (notice.outcome, fault.outcome) == ("replaced", "replaced")
    assert notice.steps["acted"].at < notice.deadline
    # Each replacement waited for its answer: drained, asked, approved, then replaced.
    for run in result.runs:
        order = [run.steps[s].at for s in ("drained", "asked", "approved", "acted")]
        assert order == sorted(order), run.steps


def test_the_ledger_names_the_approver_and_nothing_else_was_touched(
    world: World, result: Result
) -> None:
    items = world.aws("dynamodb").scan(TableName=world.ledger_table)["Items"]
    records = [plain_item(i) for i in items if i["sk"]["S"].startswith(DECISION_SK_PREFIX)]
    acted = {r.machine.instance_id for r in result.runs}
    assert {r["instance_id"] for r in records} == acted
    by_source = {r["source"]: r for r in records}
    assert set(by_source) == {"planned", "kmsg"}
    assert by_source["planned"]["fault_id"] == "planned-instance-retirement"
    for record in records:
        assert (record["outcome"], record["approved_by"]) == ("replaced", APPROVER)
    assert by_source["kmsg"]["approval_reason"] == "the vendor confirmed the DMA fault"
    untouched = [m for m in world.machines.values() if m.instance_id not in acted]
    for machine in untouched:
        assert not world.machine_events(machine.instance_id, "reboot")
        assert all(
            not s.unschedulable and not s.tainted for s in world.watch.history(machine.instance_id)
        )
