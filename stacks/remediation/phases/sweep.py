"""The sweep: drop the breaker's stale holders, so a stopped execution cannot keep its slot
(and the breaker shut) forever.

Each holder is removed by one transaction that checks ``ledger.STALE`` on the holder's node
lock, as of the sweep's own clock, and applies ``ledger.SWEEP`` to the group's and the
cluster's breakers: a live
holder makes it fail, and stays.
"""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from nodemedic.remediate import ledger, policy
from stacks.remediation.kit import state
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.render import breaker_key, text_at
from stacks.remediation.kit.transact import (
    Item,
    both_breakers,
    lock_of,
    number,
    transaction,
)

# The state of one iteration of the sweep:
HOLDER = "$.holder"
"""The holder's instance id."""
ITEM_GROUP = "$.group"
"""The node group's name."""
ITEM_NOW = "$.now"
"""The sweep's time in epoch seconds, for ``ledger.STALE``: a lock expires while a held
decision waits, so the time it was planned at would keep a stale holder live."""


def sweep(flow: Flow, *, then: sfn.IChainable) -> sfn.IChainable:
    """Read the breaker, try each holder, schedule the next sweep, go on to ``then``."""
    s = flow.scope
    read = flow.read("Read breaker", breaker_key(), state.BREAKER)
    remove = _remove_if_stale(flow)
    # A live holder makes the transaction fail: nothing to do for it.
    remove.add_catch(sfn.Pass(s, "Holder is live"), result_path=sfn.JsonPath.DISCARD)
    each = sfn.Map(
        s,
        "Sweep stale holders",
        items_path=state.BREAKER_HOLDERS,
        item_selector={
            "holder": sfn.JsonPath.string_at("$$.Map.Item.Value"),
            "group": text_at(state.GROUP_NAME),
            "now": sfn.JsonPath.number_at(state.CLOCK_EPOCH),
        },
        max_concurrency=1,
        result_path=sfn.JsonPath.DISCARD,
    ).item_processor(remove)
    flow.guard(each)
    rounds = policy.rounds(ledger.SWEEP_SECONDS, flow.settings.poll_seconds)
    scheduled = flow.put(
        "Next sweep",
        state.HOLD,
        held=True,
        rounds=sfn.JsonPath.number_at(state.HOLD_ROUNDS),
        sweep_at=sfn.JsonPath.math_add(sfn.JsonPath.number_at(state.HOLD_ROUNDS), rounds),
    )
    scheduled.next(then)
    read.next(
        sfn.Choice(s, "Any holders?")
        .when(
            sfn.Condition.is_present(state.BREAKER_HOLDERS),
            flow.clock("Sweep clock").next(each).next(scheduled),
        )
        .otherwise(scheduled)
    )
    return read


def _remove_if_stale(flow: Flow) -> sfn.TaskStateBase:
    """``ledger.STALE`` checked on the holder's lock, ``ledger.SWEEP`` on the breaker."""
    return transaction(
        flow,
        "Remove stale holder",
        [
            Item(lock_of(HOLDER), {":now": number(ITEM_NOW)}, condition=ledger.STALE),
            *both_breakers(ITEM_GROUP, HOLDER, flow.settings.name, ledger.SWEEP),
        ],
        guard=False,
    )
