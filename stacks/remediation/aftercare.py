"""After the remediations: the cleanup of executions that ended without their failure phase
(``cleanup``), and the reconcile of the nodes nodemedic took out of service (``reconcile``).

Two more state machines, each started by an EventBridge rule, on the remediation state
machine's role: they do what its failure phase and sweep do, so they need the same grants,
and the guardrails on that role (``stacks/guardrails.py``) hold for them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.remediate import parking
from stacks.remediation.cleanup import cleanup
from stacks.remediation.flow import Flow
from stacks.remediation.machine import state_machine
from stacks.remediation.reconcile import reconcile
from stacks.settings import ClusterSettings

STATUS_CHANGE: Final = "Step Functions Execution Status Change"
ENDED_UNCLEANLY: Final = ("FAILED", "TIMED_OUT", "ABORTED")
"""The statuses whose execution may have left its node without its failure phase (a failed
one usually went through it: the cleanup then finds its record ``failed``)."""


class Aftercare(Construct):
    """``cleanup`` and ``reconcile``, the state machines, and the rules that start them."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        remediation: sfn.StateMachine,
        flow: Callable[[Construct], Flow],
    ) -> None:
        super().__init__(scope, id)

        def machine(
            id: str, states: Callable[[Flow], sfn.IChainable], does: str
        ) -> sfn.StateMachine:
            within = Construct(self, id)
            return state_machine(
                within,
                settings=settings,
                states=states(flow(within)),
                comment=f"nodemedic: {does} on cluster {settings.name}",
                # A run is short; one that outlasts the reconcile's period is stuck.
                timeout_seconds=parking.RECONCILE_SECONDS,
                role=remediation.role,
            )

        self.cleanup = machine("Cleanup", cleanup, "clean up after a remediation stopped")
        self.reconcile = machine("Reconcile", reconcile, "find the nodes left out of service")
        self.stopped = events.Rule(
            self,
            "Stopped",
            description=f"nodemedic {settings.name}: a remediation ended without its failure "
            "phase: clean up after it",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=[STATUS_CHANGE],
                detail={
                    "status": list(ENDED_UNCLEANLY),
                    "stateMachineArn": [remediation.state_machine_arn],
                },
            ),
            targets=[targets.SfnStateMachine(self.cleanup)],
        )
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"nodemedic {settings.name}: reconcile the nodes out of service",
            schedule=events.Schedule.rate(Duration.seconds(parking.RECONCILE_SECONDS)),
            targets=[targets.SfnStateMachine(self.reconcile)],
        )
