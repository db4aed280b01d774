"""Failures spread over time, end to end: Neuron uncorrectable errors one after another on their own
nodes, one more than a group may replace per hour, then an Xid 48. The first ones are
replaced, the next is held and trips the cluster's breaker with exactly one page, its node
quarantined while it waits and given back when its hold runs out; after the (demo's short)
cooldown the breaker closes again and the reboot goes on. The scenario's breaker settings
are synthesized into its world's stack."""

from __future__ import annotations

import pytest

from console.cli.breaker import status
from nodemedic.contracts.kube import TAINT_KEY
from nodemedic.remediate.breaker import windows
from tests.support.e2e import group_after_replacements, run_scenario
from tests.support.windows import within_one_hour
from world.aws.inbox import Notification
from world.scenarios.kit import Result
from world.scenarios.registry import SETTINGS
from world.world import World, demo_settings

pytestmark = [pytest.mark.kube, pytest.mark.slow]
LIMIT = 3  # replacements_per_hour, the default
COOLDOWN = SETTINGS["spread"]["breaker_cooldown"]
WORLD_SETTINGS = demo_settings(**SETTINGS["spread"])


@pytest.fixture(scope="module")
def result(world: World) -> Result:
    # LIMIT replacements, then one held: all in one clock hour's rate window.
    within_one_hour(480)
    return run_scenario(world, "spread")


def pages(world: World) -> list[Notification]:
    return [m for m in world.inbox.messages() if m.outcome == "tripped"]


def test_the_first_are_replaced_the_next_held_then_a_reboot(world: World, result: Result) -> None:
    assert result.ok, (result.problems, [(r.machine.node, r.problems) for r in result.runs])
    assert [r.outcome for r in result.runs] == [*["replaced"] * LIMIT, "held", "rebooted"]
    # One after another: each line was written after the one before it had its outcome.
    for before, after in zip(result.runs, result.runs[1:], strict=False):
        assert after.written_at > before.steps["notified"].at
    replaced = {r.machine.instance_id for r in result.runs[:LIMIT]}
    members = group_after_replacements(world, replaced)
    assert len(members) == 8
    for instance_id in replaced:
        assert world.instance_state(instance_id) == "terminated"


def test_the_held_node_is_quarantined_not_drained_then_given_back_and_told_why(
    world: World, result: Result
) -> None:
    held = result.runs[LIMIT]
    history = world.watch.history(held.machine.instance_id, held.written_at)
    # It took no new work while held: cordoned and tainted at once (the quarantine).
    assert any(s.unschedulable and s.tainted for s in history)
    node = world.node(held.machine.node)
    assert node is not None and not node.spec.unschedulable
    assert not [t for t in node.spec.taints or [] if t.key == TAINT_KEY]
    assert world.instance_state(held.machine.instance_id) == "running"
    assert not world.machine_events(held.machine.instance_id, "unhealthy")
    mail = [m for m in world.inbox.about(held.machine.instance_id) if m.outcome == "held"]
    # Told once that the breaker holds it, once that it was held until its hold ran out.
    assert len(mail) == 2
    assert f"{LIMIT} replaces started in group accelerated this hour" in mail[0].body["reason"]


def test_exactly_one_page_and_the_breaker_recovers(world: World, result: Result) -> None:
    (page,) = pages(world)
    assert page.subject == "nodemedic breaker tripped: cluster demo"
    assert f"replace limit {LIMIT} per hour" in page.body["reason"]
    assert f"held for {COOLDOWN} s" in page.body["summary"]
    held, reboot = result.runs[LIMIT], result.runs[LIMIT + 1]
    assert held.steps["started"].at <= page.sent_at < reboot.written_at
    # Tripped, cooled down, and closed again by the reboot's admission.
    assert result.pacing is not None
    states = [s["state"] for s in result.pacing["states"]]
    assert states[:2] == ["closed", "tripped"] and states[-2:] == ["cooled", "closed"]
    assert result.pacing["recovered"] is True
    now = int(reboot.steps["notified"].at) + 1
    found = status(world.aws("dynamodb"), world.ledger_table, world.settings.name, now)
    assert found["state"] == "closed"
    assert found["tripped_at"] is None
    hour, _ = windows(now)
    assert {(r["action"], r["started"]) for r in found["rates"] if r["window"] == hour} == {
        ("replace", LIMIT),
        ("reboot", 1),
    }
