"""After the remediations: the cleanup of executions that ended without their failure phase
(``cleanup``), the reconcile of the nodes nodemedic took out of service (``reconcile``), and
the requests people made with the node health label (``requests``).

Three more state machines, each started by an EventBridge rule. The cleanup and the
reconcile run on the remediation state machine's role: they do what its failure phase and
sweep do, so they need the same grants, and the guardrails on that role
(``stacks/guardrails.py``) hold for them too. The requests machine has a role of its own: it
starts remediations, and a ``states:StartExecution`` grant on the remediation's role would
name that role's own state machine, a circular dependency; it touches no instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.remediate import parking
from nodemedic.settings import ClusterSettings
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.machine import state_machine
from stacks.remediation.machines.cleanup import cleanup
from stacks.remediation.machines.reconcile import reconcile
from stacks.remediation.machines.requests import REQUESTS_SECONDS, answer_requests

STATUS_CHANGE: Final = "Step Functions Execution Status Change"
ENDED_UNCLEANLY: Final = ("FAILED", "TIMED_OUT", "ABORTED")
"""The statuses whose execution may have left its node without its failure phase (a failed
one usually went through it: the cleanup then finds its record ``failed``)."""


class Aftercare(Construct):
    """``cleanup``, ``reconcile`` and ``requests``, the state machines, and the rules that
    start them."""

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
            id: str,
            states: Callable[[Flow], sfn.IChainable],
            does: str,
            *,
            period: int = parking.RECONCILE_SECONDS,
            role: iam.IRole | None = remediation.role,
        ) -> sfn.StateMachine:
            within = Construct(self, id)
            return state_machine(
                within,
                settings=settings,
                states=states(flow(within)),
                comment=f"nodemedic: {does} on cluster {settings.name}",
                # A run is short; one that outlasts its schedule's period is stuck.
                timeout_seconds=period,
                role=role,
            )

        self.cleanup = machine("Cleanup", cleanup, "clean up after a remediation stopped")
        self.reconcile = machine("Reconcile", reconcile, "find the nodes left out of service")
        self.requests = machine(
            "Requests",
            lambda flow: answer_requests(flow, remediation),
            "start the remediations the node health label asks for",
            period=REQUESTS_SECONDS,
            role=None,
        )
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
        self.requested = events.Rule(
            self,
            "Requested",
            description=f"nodemedic {settings.name}: start the remediations the node health "
            "label asks for",
            schedule=events.Schedule.rate(Duration.seconds(REQUESTS_SECONDS)),
            targets=[targets.SfnStateMachine(self.requests)],
        )
