"""The breaker: admit this remediation, or hold it (``nodemedic.remediate.breaker``).

``"Admit"`` is one transaction: a slot of the group (``ledger.ADMISSIBLE``, ``ledger.ADMIT``)
and of the cluster (``breaker.CLUSTER_ADMISSIBLE``, closed or cooled down, under
``max_in_flight``), and one count in each rate window of the action
(``breaker.RATE_ROOM``). Refused, the breaker reads its items and the policy Lambda judges
why: a limit hit trips the cluster's breaker (``breaker.TRIP``: paged and counted as
``BreakerTripped`` once per trip) or keeps it tripped (``breaker.EXTEND``); a group without
a free slot only paces. Either way the decision is reported held once, then waits and tries
again, up to ``breaker_hold``; every ``ledger.SWEEP_SECONDS`` the wait also sweeps stale
holders (``stacks.remediation.phases.sweep``), so the breaker cannot latch shut.

A planned decision (an AWS notice, ``nodemedic.remediate.planned``) takes its group's slot
alone (``"Admit notice"``): it neither counts on the cluster's breaker nor on a rate window,
trips nothing and is not held by a tripped breaker; a full group paces it as any other.
"""

from __future__ import annotations

from dataclasses import asdict

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from nodemedic.contracts.kube import PLANNED_SOURCE
from nodemedic.contracts.metrics import BREAKER_METRIC, BREAKER_TRIPPED_METRIC, METRICS_NAMESPACE
from nodemedic.remediate import breaker, ledger, policy
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import CONDITIONAL_CHECK_FAILED, Flow
from stacks.remediation.kit.render import (
    NOW,
    breaker_key,
    cluster_breaker_key,
    dynamo_instance_set,
    dynamo_now,
    dynamo_number,
    dynamo_text,
    formatted,
    rate_key,
    text_at,
)
from stacks.remediation.kit.signals import cluster_metric, in_remediation, metrics, notify
from stacks.remediation.kit.transact import (
    TRANSACTION_CANCELED,
    Item,
    Wire,
    breaker_of,
    cluster_breaker_of,
    instance_set,
    number,
    text,
    transaction,
)
from stacks.remediation.phases.fleet.recheck import while_held
from stacks.remediation.phases.quarantine import lifted
from stacks.remediation.phases.sweep import sweep

WINDOWS = ("hour", "day")


def admit(
    flow: Flow,
    *,
    report: sfn.IChainable,
    fleet_hold: sfn.IChainable,
    admitted: sfn.IChainable,
) -> sfn.IChainable:
    """Take a slot, publish the group's count, go on to ``admitted``; a decision held too
    long goes to the ``report`` as held, its quarantine lifted; a quarantined one whose
    fleet window is declared meanwhile goes to the ``fleet_hold``."""
    s = flow.scope
    # An AWS notice is not a fault: its node goes at AWS's deadline whatever is held, and a
    # wave of them (a Spot reclaim, a Capacity Block's end) says nothing of the fleet's
    # health. Only its group's slots pace it (``_take_planned``).
    entry = sfn.Choice(s, "AWS notice?")
    clock = flow.arithmetic(
        "Admission clock",
        "admission",
        {"at": NOW, "action": text_at(state.ACTION), "limits": limits(flow)},
        state.ADMISSION,
    )
    take = _take(flow)
    expired = sfn.Choice(s, "Hold expired?")
    held_before = (
        sfn.Choice(s, "Held before?")
        .when(sfn.Condition.boolean_equals(state.HELD, True), expired)
        .otherwise(_report_held(flow).next(expired))
    )
    verdict = sfn.Choice(s, "Trips the breaker?")
    verdict.when(
        sfn.Condition.string_equals(f"{state.VERDICT}.verdict", "trip"), _trip(flow, held_before)
    ).otherwise(held_before)
    take.add_catch(
        _judge(flow, then=verdict), errors=[TRANSACTION_CANCELED], result_path=sfn.JsonPath.DISCARD
    )
    flow.guard(take)
    st = flow.settings
    hold_wait = sfn.Wait(s, "Hold", time=flow.poll)
    expired.when(
        sfn.Condition.number_greater_than_equals(
            state.HOLD_ROUNDS, policy.rounds(st.breaker_hold, st.poll_seconds)
        ),
        lifted(flow, then=flow.ended("Held too long", "held").next(report)),
    ).otherwise(hold_wait)
    hold_wait.next(
        flow.next_round(
            "Count hold", state.HOLD, held=True, sweep_at=sfn.JsonPath.number_at(state.SWEEP_AT)
        )
    ).next(
        while_held(
            flow,
            hold=fleet_hold,
            then=sfn.Choice(s, "Sweep due?")
            .when(
                sfn.Condition.number_greater_than_equals_json_path(
                    state.HOLD_ROUNDS, state.SWEEP_AT
                ),
                sweep(flow, then=entry),
            )
            .otherwise(entry),
        )
    )
    count = _count_slots(flow)
    count.next(in_remediation(flow, "Publish nodes in remediation", state.SLOT_HOLDERS)).next(
        admitted
    )
    clock.next(take).next(count)
    planned = _take_planned(flow, paced=held_before)
    planned.next(count)
    entry.when(
        sfn.Condition.string_equals(state.decision("source"), PLANNED_SOURCE), planned
    ).otherwise(clock)
    return entry


def limits(flow: Flow) -> dict[str, int]:
    """The cluster's ``breaker.Limits``, as the policy Lambda reads them."""
    return asdict(flow.settings.breaker_limits)


def _admission(field: str) -> str:
    return f"{state.ADMISSION}.{field}"


def _rate_of(cluster: str, window: str) -> dict[str, Wire]:
    return ledger.key(
        text(breaker.CLUSTER_PK.format(cluster)),
        text(formatted(breaker.RATE_SK, state.GROUP_NAME, state.ACTION, _admission(window))),
    )


def _take(flow: Flow) -> sfn.TaskStateBase:
    """The admission transaction: group slot, cluster slot, and both rate windows."""
    cluster = flow.settings.name
    me = instance_set(state.INSTANCE_ID)
    instance = text(text_at(state.INSTANCE_ID))
    decision = text_at(state.decision("decision_id"))
    rates = [
        Item(
            _rate_of(cluster, window),
            {
                ":limit": number(_admission(f"{window}ly" if window == "hour" else "daily")),
                ":decision": text(decision),
                ":decisions": {"SS": sfn.JsonPath.array(decision)},
            },
            condition=breaker.RATE_ROOM,
            change=breaker.COUNT_START,
        )
        for window in WINDOWS
    ]
    return transaction(
        flow,
        "Admit",
        [
            Item(
                breaker_of(state.GROUP_NAME),
                {
                    ":me": me,
                    ":instance": instance,
                    ":now": text(NOW),
                    ":limit": number(state.LIMIT),
                },
                condition=ledger.ADMISSIBLE,
                change=ledger.ADMIT,
            ),
            Item(
                cluster_breaker_of(cluster),
                {
                    ":me": me,
                    ":instance": instance,
                    ":now": number(_admission("epoch")),
                    ":limit": number(_admission("cap")),
                },
                condition=breaker.CLUSTER_ADMISSIBLE,
                change=breaker.CLUSTER_ADMIT,
            ),
            *rates,
        ],
        guard=False,
    )


def _take_planned(flow: Flow, *, paced: sfn.IChainable) -> sfn.TaskStateBase:
    """A planned decision's admission: its group's slot alone (``ledger.ADMISSIBLE``, so
    ``max_parallel`` and ``max_unhealthy_percent``), never the cluster's nor a rate window,
    which count faults; a full group paces it (``paced``) and trips nothing."""
    take = flow.guard(
        flow.write(
            "Admit notice",
            breaker_key(),
            ledger.ADMIT,
            {
                ":me": dynamo_instance_set(),
                ":instance": dynamo_text(state.INSTANCE_ID),
                ":now": dynamo_now(),
                ":limit": dynamo_number(state.LIMIT),
            },
            condition=ledger.ADMISSIBLE,
        )
    )
    full = flow.put(
        "Notice paced",
        state.VERDICT,
        verdict="paced",
        reason=formatted("no free slot in group {}", state.GROUP_NAME),
    )
    take.add_catch(full, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    full.next(paced)
    return take


def _count_slots(flow: Flow) -> tasks.DynamoGetItem:
    """``$.slot``: when admitted, and the group's holders then (the transaction returns no
    item)."""
    return flow.guard(
        tasks.DynamoGetItem(
            flow.scope,
            "Count slots",
            table=flow.ledger,
            key=breaker_key(),
            consistent_read=True,
            result_selector={
                "at": NOW,
                "holders": sfn.JsonPath.array_length(
                    sfn.JsonPath.list_at(f"$.Item.{ledger.HOLDERS}.SS")
                ),
            },
            result_path=state.SLOT,
        )
    )


def _judge(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Read the cluster's breaker and the rate windows, and ask why the admission was
    refused (``breaker.judge``)."""
    cluster = flow.settings.name
    reads = [
        flow.read("Read cluster breaker", cluster_breaker_key(cluster), f"{state.WHY}.breaker")
    ]
    reads += [
        flow.read(
            f"Read {window} rate", rate_key(cluster, _admission(window)), f"{state.WHY}.{window}"
        )
        for window in WINDOWS
    ]
    judged = flow.arithmetic(
        "Judge refusal",
        "judge",
        {
            **{
                part: sfn.JsonPath.object_at(f"{state.WHY}.{part}")
                for part in ("breaker", *WINDOWS)
            },
            "instance": text_at(state.INSTANCE_ID),
            "decision": text_at(state.decision("decision_id")),
            "action": text_at(state.ACTION),
            "group": text_at(state.GROUP_NAME),
            "now": sfn.JsonPath.number_at(_admission("epoch")),
            "limits": limits(flow),
        },
        state.VERDICT,
    )
    chain = sfn.Chain.start(reads[0])
    for task in (*reads[1:], judged):
        chain = chain.next(task)
    chain.next(then)
    return reads[0]


def _trip(flow: Flow, held: sfn.IChainable) -> sfn.IChainable:
    """Trip the cluster's breaker and page, or, tripped already, extend its cooldown
    quietly; then on to ``held``."""
    cluster = flow.settings.name
    values = {
        ":until": dynamo_number(_admission("until")),
        ":reason": dynamo_text(state.VERDICT_REASON),
    }
    trip = flow.write(
        "Trip breaker",
        cluster_breaker_key(cluster),
        breaker.TRIP,
        {**values, ":now": dynamo_number(_admission("epoch"))},
        condition=breaker.NOT_TRIPPED,
    )
    extend = flow.write(
        "Extend cooldown",
        cluster_breaker_key(cluster),
        breaker.EXTEND,
        values,
        condition=breaker.TRIPPED,
    )
    # Reset by an operator meanwhile: nothing to extend, the decision is held this round.
    extend.add_catch(held, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    trip.add_catch(extend, errors=[CONDITIONAL_CHECK_FAILED], result_path=sfn.JsonPath.DISCARD)
    flow.guard(trip)
    flow.guard(extend).next(held)
    page = notify(
        flow,
        "Page breaker tripped",
        f"nodemedic breaker tripped: cluster {cluster}",
        {
            "outcome": "tripped",
            "action": sfn.JsonPath.string_at(state.ACTION),
            "reason": sfn.JsonPath.string_at(state.VERDICT_REASON),
            "summary": formatted(
                "breaker tripped on cluster {}: {}; every reboot and replacement of the "
                "cluster is held for {} s, then until its limits have room again; "
                "nodemedic breaker status|reset --cluster {}",
                cluster,
                state.VERDICT_REASON,
                str(flow.settings.breaker_cooldown),
                cluster,
            ),
        },
    )
    trip.next(page).next(
        cluster_metric(
            flow,
            "Publish breaker tripped",
            BREAKER_TRIPPED_METRIC,
            1,
            cluster=sfn.JsonPath.string_at(state.CLUSTER),
        )
    ).next(held)
    return trip


def _report_held(flow: Flow) -> sfn.Chain:
    """The first time the breaker holds this decision: ledger, mail and ``BreakerHeld``."""
    st = flow.settings
    return (
        flow.guard(flow.record("Record held", record_state="held"))
        .next(
            notify(
                flow,
                "Notify held",
                formatted("nodemedic held: {}", state.INSTANCE_ID),
                {
                    "outcome": "held",
                    "action": sfn.JsonPath.string_at(state.ACTION),
                    "reason": sfn.JsonPath.string_at(state.VERDICT_REASON),
                    "summary": formatted(
                        "breaker holds {} of {} (group {}): {}; nothing is drained, "
                        "rebooted or replaced and the decision waits up to {} s (max_parallel {}, "
                        "max_unhealthy_percent {}, group limit {} of {} nodes)",
                        state.ACTION,
                        state.INSTANCE_ID,
                        state.GROUP_NAME,
                        state.VERDICT_REASON,
                        str(st.breaker_hold),
                        state.MAX_PARALLEL,
                        state.MAX_UNHEALTHY_PERCENT,
                        state.LIMIT,
                        state.GROUP_SIZE,
                    ),
                },
            )
        )
        .next(
            metrics(
                flow,
                "Publish held metric",
                METRICS_NAMESPACE,
                [{"name": BREAKER_METRIC, "value": 1, "unit": "Count"}],
            )
        )
    )
