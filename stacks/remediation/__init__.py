"""The remediation of one cluster: the ledger, the policy function, the remediation state
machine and the state machines beside it.

- ``phases/``: the flow, one module per phase (fleet correlation's in ``phases/fleet/``),
  wired in the one order ``nodemedic.remediate.phases.PHASES`` gives (``phases/__init__.py``
  tells the flow phase by phase).
- ``kit/``: what every state machine here builds with: the ``Flow``, the execution state's
  paths, the ledger's rules as tasks and transactions, metrics and mail, the state machine
  with its logs.
- ``machines/``: the cleanup of executions that ended without their failure phase, the
  reconcile of the nodes nodemedic took out, the requests of the node health label.

The ledger's items: ``nodemedic.remediate.ledger``.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy, aws_lambda
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from constructs import Construct

from nodemedic.contracts.ledger import HISTORY_TTL_ATTRIBUTE
from nodemedic.settings import ClusterSettings
from stacks.bundling import bundled_files
from stacks.functions import PythonFunction
from stacks.remediation.kit.flow import Flow
from stacks.remediation.kit.machine import state_machine
from stacks.remediation.machines.aftercare import Aftercare
from stacks.remediation.phases import states

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
            states=states(flow(self)),
            comment=f"nodemedic: remediate one decision on cluster {settings.name}",
            timeout_seconds=timeout,
        )
        self.aftercare = Aftercare(
            self, "Aftercare", settings=settings, remediation=self.state_machine, flow=flow
        )
