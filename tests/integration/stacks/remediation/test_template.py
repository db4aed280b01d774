"""The state machine ``cdk synth`` produces, read as a definition (no execution)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE
from nodemedic.remediate import breaker, ledger, parking, policy
from stacks.synth import synth_template
from tests.support.remediation import (
    DRY,
    FAST,
    NODE_GROUPS,
    WATCH,
    lambda_target,
    state_machine_definition,
)
from tests.support.templates import policy_statements

NATIVE = {
    "arn:${AWS::Partition}:states:::dynamodb:putItem",
    "arn:${AWS::Partition}:states:::dynamodb:updateItem",
    "arn:${AWS::Partition}:states:::dynamodb:getItem",
    "arn:${AWS::Partition}:states:::dynamodb:deleteItem",
    "arn:${AWS::Partition}:states:::sns:publish",
    "arn:${AWS::Partition}:states:::aws-sdk:autoscaling:describeAutoScalingInstances",
    "arn:${AWS::Partition}:states:::aws-sdk:autoscaling:setInstanceHealth",
    # The acting cluster keeps a spare in one group (``stacks/remediation/phases/spares.py``).
    "arn:${AWS::Partition}:states:::aws-sdk:autoscaling:exitStandby",
    "arn:${AWS::Partition}:states:::aws-sdk:autoscaling:enterStandby",
    "arn:${AWS::Partition}:states:::aws-sdk:ec2:rebootInstances",
    "arn:${AWS::Partition}:states:::aws-sdk:cloudwatch:putMetricData",
    "arn:${AWS::Partition}:states:::aws-sdk:dynamodb:transactWriteItems",
}
KUBE_OPS = {
    # A node group's size: no native call returns it without every instance of the group.
    "group_size",
    "locate",
    "mark",
    "drain",
    "node_status",
    # With post_reboot_deep_check (the default) a reboot holds the node instead of "clear".
    "hold_for_deep_check",
    "delete_node",
    "fail",
    "hold",
    # A quarantine the breaker held past breaker_hold, given back.
    "lift",
    "jobs_on_node",
    "resume_jobs",
    "deep_check",
    # The acting cluster keeps a spare in one group.
    "pick_spare",
    "admit_spare",
    "hold_spare",
}

AUTO_RESUME = {
    "Find jobs to resume",
    "Record jobs",
    "Resume jobs",
    "Record resumed jobs",
    "Notify jobs",
}
"""Auto-resume's tasks (``stacks/remediation/phases/resume.py``): each error goes on with the
flow."""

REFILL = {"Hold newcomer as spare", "Enter standby", "Give newcomer back"}
"""The spare pool's refill (``stacks/remediation/phases/spares.py``), after the broken Node is
gone."""


def states(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from definition["States"].items()


def test_every_task_is_a_native_integration_or_a_known_lambda(
    default_template: dict[str, Any],
) -> None:
    definition = state_machine_definition(default_template)
    tasks = [s for _, s in states(definition) if s["Type"] == "Task"]
    native = {s["Resource"] for s in tasks if s["Resource"].startswith("arn:")}
    assert native == NATIVE
    handlers = {lambda_target(s, default_template) for s in tasks if s["Resource"].startswith("${")}
    assert handlers == {"lambdas.kube.handler.handler", "lambdas.policy.handler.handler"}


def test_the_kube_lambda_is_asked_only_for_the_contract_ops(
    default_template: dict[str, Any],
) -> None:
    definition = state_machine_definition(default_template)
    ops = {
        s["Parameters"]["op"]
        for _, s in states(definition)
        if s["Type"] == "Task"
        and s["Resource"].startswith("${")
        and lambda_target(s, default_template) == "lambdas.kube.handler.handler"
    }
    assert ops == KUBE_OPS


def test_only_the_kube_lambda_reads_whole_node_groups(default_template: dict[str, Any]) -> None:
    """DescribeAutoScalingGroups answers every instance of a group: the kube Lambda's
    ``group_size`` may call it, the state machine (256 KiB a task result) may not."""
    resources = default_template["Resources"]
    (kube,) = (
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "lambdas.kube.handler.handler"
    )
    roles = [
        role["Ref"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy"
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
        if "autoscaling:DescribeAutoScalingGroups" in json.dumps(statement["Action"])
        for role in r["Properties"]["Roles"]
    ]
    assert roles == [kube]


def test_the_definition_uses_jsonpath_only(default_template: dict[str, Any]) -> None:
    text = json.dumps(state_machine_definition(default_template))
    assert "JSONata" not in text
    assert "{%" not in text


def test_every_task_outside_the_failure_chain_is_caught_into_it(
    default_template: dict[str, Any],
) -> None:
    definition = state_machine_definition(default_template)
    failure_chain = {
        "Record failure",
        "Mark failure",
        "Failed: clock",
        "Park node",
        "Park node held out",
        "Failed: release slot",
        "Failed: release cluster slot",
        "Failed: publish nodes in remediation",
        "Failed: release lock",
        "Notify failure",
        "Publish failure metric",
    }
    for name, state in states(definition):
        if state["Type"] != "Task":
            continue
        catchers = state.get("Catch", [])
        assert catchers, f"{name} has no Catch"
        if name in failure_chain:
            continue
        if name == "Flag recurrence":  # best effort: any failure still ends as a duplicate
            assert catchers[-1]["Next"] == "Record duplicate"
            continue
        # Before the decision is recorded: nothing for the failure phase to close.
        if name in ("Read classifier marker", "Read planned marker", "Publish forged decision"):
            # A marker that cannot be read proves nothing: refused, the node untouched.
            assert catchers[-1]["Next"] in ("Publish forged decision", "Refused forged decision")
            continue
        if name in ("Admit checked node", "Lift hold cordon"):  # the execution fails
            assert catchers[-1]["Next"] == "Admission failed"
            continue
        if name.startswith("Read checked node's lock"):  # a read that fails keeps the cordon
            assert catchers[-1]["Next"] == name.replace("Read checked node's lock", "Keep cordon")
            continue
        if name == "Label deep check failed":  # the label only tells; the replace goes on
            assert catchers[-1]["Next"] == "Record decision"
            continue
        if name == "Exit standby":  # the spare left Standby some other way: replace without it
            assert catchers[-1]["Next"] == "No spare after all"
            continue
        if name in REFILL:  # the pool stays one short; the repair itself is done
            assert catchers[-1]["ErrorEquals"] == ["States.ALL"], name
            assert catchers[-1]["Next"] != "Record failure", name
            continue
        if name in AUTO_RESUME:  # a job that cannot be resumed never fails the node's repair
            assert catchers[-1]["ErrorEquals"] == ["States.ALL"], name
            assert catchers[-1]["Next"] != "Record failure", name
            continue
        last = catchers[-1]
        assert (last["ErrorEquals"], last["Next"]) == (["States.ALL"], "Record failure"), name
        assert last["ResultPath"] == "$.error"


def test_waits_and_loop_bounds_come_from_the_settings() -> None:
    assert (DRY.poll_seconds, DRY.drain_timeout, DRY.reboot_timeout, DRY.breaker_hold) == (
        7,
        70,
        140,
        700,
    )
    definition = state_machine_definition(synth_template(DRY))
    waits = {name: s for name, s in states(definition) if s["Type"] == "Wait"}
    assert {s.get("Seconds", s.get("SecondsPath")) for s in waits.values()} == {
        7,
        "$.drain.wait",
        "$.judged.wait",
        "$.judged.settles_in",
        "$.plan.wait_before_acting",
    }
    assert definition["States"]["Begin drain"]["Parameters"]["wait"] == 7

    def bound(choice: str, variable: str) -> int:
        rules = definition["States"][choice]["Choices"]
        (rule,) = (r for r in rules if r.get("Variable") == variable)
        return int(rule["NumericGreaterThanEquals"])

    assert bound("Hold expired?", "$.hold.rounds") == 100
    assert bound("Rebooted?", "$.watch.rounds") == 20
    assert bound("Terminating?", "$.term.rounds") == 20
    # The drain's bound and timeout are the plan's: a node group may set its own.
    (drained,) = (
        r
        for r in definition["States"]["Drained?"]["Choices"]
        if r.get("Variable") == "$.drain.rounds"
    )
    assert drained["NumericGreaterThanEqualsPath"] == "$.plan.drain_rounds"
    sent = definition["States"]["Plan"]["Parameters"]["policy"]
    assert (sent["drain_rounds"], sent["drain_timeout"]) == (policy.drain_rounds(70, 7), 70)
    assert (
        definition["States"]["Drain"]["Parameters"]["timeout_seconds.$"] == "$.plan.drain_timeout"
    )
    # A held decision sweeps stale breaker holders once a minute: every 9th round of 7 s.
    sweep = definition["States"]["Next sweep"]["Parameters"]["sweep_at.$"]
    assert sweep == "States.MathAdd($.hold.rounds, 9)"
    timeout = policy.execution_timeout(
        breaker_hold=700,
        drain_timeout=70,
        reboot_timeout=140,
        poll_seconds=7,
        fleet_settle=DRY.fleet_settle,
    )
    assert definition["TimeoutSeconds"] == timeout


def test_the_plan_receives_the_cluster_safety_settings() -> None:
    definition = state_machine_definition(synth_template(WATCH))
    sent = definition["States"]["Plan"]["Parameters"]["policy"]
    assert sent == {
        "recovery_mode": "None",
        "dry_run": False,
        "node_groups": list(NODE_GROUPS),
        "max_unhealthy_percent": 10,
        "max_parallel": 3,
        "escalation_window": 1200,
        "lock_seconds": policy.execution_timeout(
            breaker_hold=FAST["breaker_hold"],
            drain_timeout=FAST["drain_timeout"],
            reboot_timeout=FAST["reboot_timeout"],
            poll_seconds=FAST["poll_seconds"],
            fleet_settle=FAST["fleet_settle"],
        ),
        "force_drain": False,
        "history_days": 90,
        "actions": {},
        "wait_before_acting": 0,
        "drain_timeout": FAST["drain_timeout"],
        "drain_rounds": policy.drain_rounds(FAST["drain_timeout"], FAST["poll_seconds"]),
    }
    assert definition["States"]["Plan"]["Parameters"]["group_policies"] == {}
    # The held mail quotes the limits of the node's group, which the plan carries.
    held = json.dumps(definition["States"]["Notify held"])
    assert "$.plan.max_parallel" in held and "$.plan.max_unhealthy_percent" in held
    assert definition["States"]["Ours?"]["Choices"][0]["StringEquals"] == "watch"

    # The drain deletes what eviction left only when the plan says so (a replacement, with
    # force_drain set): never before a reboot.
    assert definition["States"]["Drain"]["Parameters"]["force.$"] == "$.plan.force_drain"
    dry = state_machine_definition(synth_template(DRY))["States"]["Plan"]["Parameters"]["policy"]
    assert (dry["recovery_mode"], dry["dry_run"]) == ("Automatic", True)


def test_set_instance_health_is_allowed_on_the_managed_node_groups_only(
    default_template: dict[str, Any],
) -> None:
    (health,) = (
        s
        for s in policy_statements(default_template)
        if s["Action"] == "autoscaling:setInstanceHealth"
    )
    arns = [json.dumps(arn) for arn in health["Resource"]]
    assert len(arns) == len(NODE_GROUPS)
    for arn, group in zip(arns, NODE_GROUPS, strict=True):
        assert arn.endswith(f':autoScalingGroup:*:autoScalingGroupName/{group}"]]}}'), arn
    assert not any('"*"' in arn for arn in arns)


def test_the_ledger_tasks_send_the_ledger_rules(default_template: dict[str, Any]) -> None:
    found = state_machine_definition(default_template)["States"]

    def sent(name: str, field: str) -> str:
        return str(found[name]["Parameters"][field])

    assert sent("Take node lock", "ConditionExpression") == ledger.LOCK_FREE.text
    assert sent("Note reboot on lock", "UpdateExpression") == ledger.NOTE_REBOOT.text
    assert sent("Flag recurrence", "ConditionExpression") == ledger.RECURRENCE.text
    assert sent("Flag recurrence", "UpdateExpression") == ledger.FLAG_RECURRENCE.text
    assert sent("Flag upgrade", "ConditionExpression") == ledger.UPGRADABLE.text
    assert sent("Flag upgrade", "UpdateExpression") == ledger.FLAG_UPGRADE.text
    weaker = found["Flag upgrade"]["Parameters"]["ExpressionAttributeValues"][":weaker"]
    assert weaker == {"S": ledger.UPGRADED_FROM}
    assert found["Take node lock"]["Parameters"]["Item"][ledger.PLANNED_ACTION] == {
        "S.$": "$.plan.action"
    }
    for name in ("Note reboot on lock", "Note give-back on lock"):
        assert sent(name, "ConditionExpression") == ledger.UNFLAGGED.text
    assert sent("Note give-back on lock", "UpdateExpression") == ledger.GIVE_BACK.text
    group, cluster, hour, day = (
        next(iter(i.values())) for i in found["Admit"]["Parameters"]["TransactItems"]
    )
    assert (group["ConditionExpression"], group["UpdateExpression"]) == (
        ledger.ADMISSIBLE.text,
        ledger.ADMIT.text,
    )
    assert (cluster["ConditionExpression"], cluster["UpdateExpression"]) == (
        breaker.CLUSTER_ADMISSIBLE.text,
        breaker.CLUSTER_ADMIT.text,
    )
    for window in (hour, day):
        assert (window["ConditionExpression"], window["UpdateExpression"]) == (
            breaker.RATE_ROOM.text,
            breaker.COUNT_START.text,
        )
    assert sent("Trip breaker", "ConditionExpression") == breaker.NOT_TRIPPED.text
    assert sent("Extend cooldown", "UpdateExpression") == breaker.EXTEND.text
    for prefix in ("Finally ", "Failed: "):
        assert sent(f"{prefix}release slot", "UpdateExpression") == ledger.RELEASE.text
        assert sent(f"{prefix}release cluster slot", "UpdateExpression") == ledger.RELEASE.text
        assert sent(f"{prefix}release lock", "ConditionExpression") == ledger.LOCK_HELD_BY.text
    sweep = found["Sweep stale holders"]["ItemProcessor"]["States"]["Remove stale holder"]
    check_item, update_item, cluster_item = sweep["Parameters"]["TransactItems"]
    assert cluster_item["Update"]["UpdateExpression"] == ledger.SWEEP.text
    assert check_item["ConditionCheck"]["ConditionExpression"] == ledger.STALE.text
    assert update_item["Update"]["UpdateExpression"] == ledger.SWEEP.text


def test_the_node_is_rebooted_and_given_back_only_while_the_lock_asks_for_no_escalation(
    default_template: dict[str, Any],
) -> None:
    found = state_machine_definition(default_template)["States"]
    assert found["Start rebooting"]["Next"] == "Note reboot on lock"
    assert found["Note reboot on lock"]["Next"] == "Record reboot"
    assert found["Record reboot"]["Next"] == "Reboot instance"
    assert found["Settle"]["Next"] == "Note give-back on lock"
    assert found["Note give-back on lock"]["Next"] == "Hold for deep check"
    for name in ("Note reboot on lock", "Note give-back on lock"):
        refused = found[name]["Catch"][0]
        assert (refused["ErrorEquals"], refused["Next"]) == (
            ["DynamoDB.ConditionalCheckFailedException"],
            "Read recurrence",
        ), name
    (stronger,) = found["Stronger?"]["Choices"]
    assert stronger["Next"] == "Flag upgrade"
    assert {(c["Variable"], c["StringEquals"]) for c in stronger["And"]} == {
        ("$.plan.action", ledger.UPGRADED_TO),
        ("$.plan.mode", "act"),
    }
    assert found["Stronger?"]["Default"] == "Record duplicate"


def test_the_policy_lambda_is_called_for_date_arithmetic_only(
    default_template: dict[str, Any],
) -> None:
    """Once to plan (escalation window, epoch times, breaker limit), for the two durations
    the metrics report, for the time a sweep or a park runs at, and to judge a fault's fleet
    window and the quarantine's limits; never to unpick a DynamoDB answer."""
    definition = state_machine_definition(default_template)
    calls = {
        name: s["Parameters"]
        for name, s in states(definition)
        if s["Type"] == "Task"
        and s["Resource"].startswith("${")
        and lambda_target(s, default_template) == "lambdas.policy.handler.handler"
    }
    assert {name: p["op"] for name, p in calls.items()} == {
        "Plan": "plan",
        "Fault to action": "elapsed",
        "Fault to action (quarantine)": "elapsed",
        "Elapsed": "elapsed",
        "Sweep clock": "clock",
        "Failed: clock": "clock",
        # The breaker: the rate windows of now, and why a refused admission was refused
        # (it reads the GetItem answers of three items, attributes possibly missing).
        "Admission clock": "admission",
        "Judge refusal": "judge",
        "Judge fleet": "fleet",
        "Judge fleet now": "fleet",
        "Judge fleet to mail": "fleet",
        # The quarantine's window and its shares of the group and the cluster.
        "Quarantine limits": "quarantine",
    }
    assert calls["Plan"]["last_reboot.$"] == "$.last_reboot"
    reshaped = definition["States"]["Last reboot"]
    assert (reshaped["Parameters"], reshaped["ResultPath"]) == (
        {"at.$": "$.last_reboot.Item.at.S"},
        "$.last_reboot",
    )


def test_a_failure_parks_by_the_parking_rules_and_a_sweep_goes_by_its_own_clock(
    default_template: dict[str, Any],
) -> None:
    found = state_machine_definition(default_template)["States"]
    taken_out = found["Node taken out?"]["Choices"]
    assert taken_out == [{"Variable": "$.slot", "IsPresent": True, "Next": "Failed: clock"}]
    lock, group, cluster = (i["Update"] for i in found["Park node"]["Parameters"]["TransactItems"])
    assert lock["ConditionExpression"] == ledger.LOCK_HELD_BY.text
    assert lock["UpdateExpression"] == parking.PARK.text
    assert group["UpdateExpression"] == cluster["UpdateExpression"] == parking.COUNT.text
    assert found["Sweep clock"]["Next"] == "Sweep stale holders"
    assert found["Sweep stale holders"]["ItemSelector"]["now.$"] == "$.clock.epoch"


def test_the_ledger_lets_decision_records_go_after_history_days(
    default_template: dict[str, Any],
) -> None:
    (table,) = (
        r["Properties"]
        for k, r in default_template["Resources"].items()
        if r["Type"] == "AWS::DynamoDB::Table" and k.startswith("RemediationLedger")
    )
    assert table["TimeToLiveSpecification"] == {
        "AttributeName": HISTORY_TTL_ATTRIBUTE,
        "Enabled": True,
    }
