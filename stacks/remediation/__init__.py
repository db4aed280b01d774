"""The remediation state machine: one decision record in, a healed or recorded node out.

One module per phase in ``phases/`` (fleet correlation's in ``phases/fleet/``), each a
function of the ``Flow`` (``kit/flow.py``) and the states it goes on to; ``kit/state.py``
names every path of the execution state, ``kit/render.py`` turns the ledger's rules
(``nodemedic.remediate.ledger``) into task parameters. JSONPath query
language, native integrations everywhere except the Kubernetes API (the kube Lambda) and
the date arithmetic States Language cannot do (the policy Lambda):

1. ``intake``: "Valid decision?" and "Ours?", "Record decision", the node group, the last
   reboot for this fault, "Plan" (mode notify | monitor | act, escalation, breaker limit),
   the fault's metric. notify (an application fault): report only, no lock.
2. ``lock``: "Take node lock", one remediation per node; a second decision for a node in
   flight ends as "Duplicate" (and flags a recurrence if the node was already rebooted for
   the same fault), or, stronger, as "Upgraded" (``upgrade``: the reboot in flight becomes
   a replacement). monitor (recovery_mode None, dry_run, a group outside ``node_groups``):
   label and condition only.
3. ``breaker`` (and ``sweep``): act only once admitted into the group's slots; held
   decisions wait, sweeping stale holders once a minute.
4. ``mark``, ``drain``, then ``reboot`` (watch for a new boot id, escalate to replace when
   none comes, the fault recurs or a stronger decision upgraded it) or ``replace``
   (SetInstanceHealth Unhealthy, wait for termination, delete the Node).
5. ``report``: metrics, SNS, close the ledger, ``release`` the slot and the lock. Any
   failure on the way goes to ``failure``: the ledger and the Node say where it stopped,
   SNS says so, and the execution ends in "Remediation failed". A node taken out of
   service stays locked and counted by the breaker (``nodemedic.remediate.parking``);
   otherwise the lock is released.
6. ``machines/aftercare``: three more state machines. ``cleanup`` runs the failure phase for an
   execution that timed out or was stopped (an EventBridge rule on its status change);
   ``reconcile`` (scheduled) finds the nodes nodemedic took out with no live remediation,
   keeps the failed ones counted and publishes ``StrandedNodes``; ``requests`` (every
   minute) starts the manual decisions the node health label asks for.

Metrics (namespace NodeMedic, dimensions Cluster and NodeGroup): ``Remediations`` (plus
``Action`` and ``Outcome``) and ``RemediationSeconds`` per decision, ``BreakerHeld`` per
hold, ``InRemediation`` (the group's breaker holders, a gauge published at every admission
and release) and ``FaultToActionSeconds`` (the fault's ``first_seen`` to the cordon); the
fault's own catalog metric in its namespace. The ledger's items: ``nodemedic.remediate.ledger``.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy, aws_lambda
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE
from nodemedic.settings import ClusterSettings
from stacks.bundling import bundled_files
from stacks.functions import PythonFunction
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.machine import state_machine
from stacks.remediation.machines.aftercare import Aftercare
from stacks.remediation.phases.breaker import admit
from stacks.remediation.phases.drain import drain, reboot_or_replace
from stacks.remediation.phases.failure import failure
from stacks.remediation.phases.fleet.declare import declaring
from stacks.remediation.phases.fleet.gate import gate
from stacks.remediation.phases.fleet.hold import hold
from stacks.remediation.phases.fleet.judge import judge
from stacks.remediation.phases.fleet.recheck import recheck
from stacks.remediation.phases.fleet.sight import sight
from stacks.remediation.phases.intake import intake
from stacks.remediation.phases.lock import lock
from stacks.remediation.phases.mark import mark
from stacks.remediation.phases.reboot import reboot
from stacks.remediation.phases.replace import replace
from stacks.remediation.phases.report import report

_ROOT = Path(__file__).resolve().parents[2]
POLICY_PACKAGES = ("lambdas/__init__.py", "lambdas/policy", "nodemedic")
"""The policy function's code: its handler and the domain, which need nothing outside the
standard library on the handler's import path."""


def _policy_code() -> aws_lambda.Code:
    files = [path.as_posix() for path in bundled_files(POLICY_PACKAGES)]
    folders = sorted({parent.as_posix() for path in files for parent in Path(path).parents})
    kept = [name for name in (*folders, *files) if name != "."]
    return aws_lambda.Code.from_asset(
        str(_ROOT), exclude=["*", ".*", *(f"!{name}" for name in kept)]
    )


def _states(flow: Flow) -> sfn.IChainable:
    """The phases, wired: each is built with the states it goes on to."""
    failed = failure(flow)
    reported = report(flow)
    replaced = replace(flow, report=reported, failure=failed)
    rebooted = reboot(flow, report=reported, replace=replaced)
    held = hold(flow, report=reported)
    declare = declaring(flow, hold=held)
    acting = judge(
        flow, declare=declare, then=reboot_or_replace(flow, reboot=rebooted, replace=replaced)
    )
    drained = drain(flow, failure=failed, act=acting)
    marked = recheck(flow, hold=held, then=mark(flow, drained))
    admitted = admit(flow, report=reported, admitted=marked)
    locked = lock(
        flow,
        report=reported,
        failure=failed,
        act=gate(flow, hold=held, declare=declare, then=admitted),
    )
    start = intake(flow, report=reported, act=sight(flow, then=locked))
    flow.catch_all(failed)
    return start


class Remediation(Construct):
    """The ledger table, the policy function and the remediation state machine of one cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        kube_function: aws_lambda.IFunction,
        topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, id)
        self.ledger = dynamodb.Table(
            self,
            "Ledger",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
            # Decision records only carry it (``history_days``): the history expires, the
            # locks and breakers do not.
            time_to_live_attribute=HISTORY_TTL_ATTRIBUTE,
        )
        self.policy = PythonFunction(
            self,
            "Policy",
            settings=settings,
            code=_policy_code(),
            handler="lambdas.policy.handler.handler",
            service="nodemedic-policy",
            description="remediation policy arithmetic",
            environment={},
            memory_size=128,
            timeout_seconds=10,
        )
        self.policy_function = self.policy.function
        timeout = settings.lock_seconds

        def flow(scope: Construct) -> Flow:
            return Flow(
                scope,
                settings=settings,
                kube=kube_function,
                policy_function=self.policy_function,
                topic=topic,
                ledger_table=self.ledger,
                lock_seconds=timeout,
            )

        self.state_machine = state_machine(
            self,
            settings=settings,
            states=_states(flow(self)),
            comment=f"nodemedic: remediate one decision on cluster {settings.name}",
            timeout_seconds=timeout,
        )
        self.aftercare = Aftercare(
            self, "Aftercare", settings=settings, remediation=self.state_machine, flow=flow
        )
