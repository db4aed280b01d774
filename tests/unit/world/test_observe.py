"""``Observer``'s reading of an execution's history: an execution that ends between the
history read and the next look is still seen to reach its last states (a storm on a busy
machine once reported a held node as never held)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nodemedic.contracts.stack import FLEET_HELD_STATE
from world.observe import Observer

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:remediation"


def _entered(name: str, at: int) -> dict[str, Any]:
    return {
        "type": "PassStateEntered",
        "timestamp": at,
        "stateEnteredEventDetails": {"name": name},
    }


BEFORE_HOLD = [
    {"type": "ExecutionStarted", "timestamp": 0},
    _entered("Fleet hold as reason", 1),
]
ENDED = [
    *BEFORE_HOLD,
    _entered(FLEET_HELD_STATE, 2),
    {"type": "ExecutionSucceeded", "timestamp": 3},
]


class EndingExecution:
    """Step Functions as a busy machine answers: the first history is read while the
    execution runs, and it ends before anyone asks again."""

    class exceptions:  # the shape of a boto3 client's ``exceptions``
        ExecutionDoesNotExist = LookupError

    def __init__(self) -> None:
        self.reads = 0

    def get_execution_history(self, **_: Any) -> dict[str, Any]:
        self.reads += 1
        return {"events": BEFORE_HOLD if self.reads == 1 else ENDED}

    def describe_execution(self, **_: Any) -> dict[str, Any]:
        return {"status": "RUNNING" if self.reads == 0 else "SUCCEEDED"}


def _observer(sfn: EndingExecution) -> Observer:
    world = SimpleNamespace(aws=lambda _: sfn, state_machine_arn=MACHINE)
    return Observer(world)  # type: ignore[arg-type]


def test_a_history_read_before_the_execution_ended_is_read_again() -> None:
    sfn = EndingExecution()
    observer = _observer(sfn)
    run: Any = SimpleNamespace(decision_id="i-0a-1-neuron-dma-error")
    assert observer.state_entered(run, FLEET_HELD_STATE) is None
    assert observer.state_entered(run, FLEET_HELD_STATE) == 2.0


def test_an_ended_history_is_read_once() -> None:
    sfn = EndingExecution()
    sfn.reads = 1
    observer = _observer(sfn)
    run: Any = SimpleNamespace(decision_id="i-0a-1-neuron-dma-error")
    for _ in range(3):
        assert observer.state_entered(run, FLEET_HELD_STATE) == 2.0
    assert sfn.reads == 2
