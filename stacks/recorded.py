"""Who may write the recorders' markers (``nodemedic.remediate.recorded``): the classifier
its partition and the planned Lambda its own, each only there (``dynamodb:LeadingKeys``).
Every other role that writes the ledger is denied both partitions: the remediation state
machine (and the cleanup and reconcile on its role), which reads them before it acts, and
the job monitor. So a principal that may start an execution cannot also vouch for it. They
are denied the classifier's kept registrations too (``REGISTRATION_PK_PREFIX``, granted in
``stacks.origin``): a key put there would prove any line of its node."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda

from nodemedic.contracts.env import ENV_LEDGER_TABLE
from nodemedic.contracts.ledger import CLASSIFIED_PK, PLANNED_PK, REGISTRATION_PK_PREFIX

LEDGER_WRITES = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
)
"""Every item write a ledger grant can give; a deny of these keeps a partition read-only."""


def record_decisions(
    ledger: dynamodb.ITable,
    *,
    classifier: aws_lambda.Function,
    planned: aws_lambda.Function | None,
    others: Sequence[iam.IGrantable],
) -> None:
    """Grant each recorder its partition; deny ``others`` (the ledger's other writers)
    both."""
    for function, partition in ((classifier, CLASSIFIED_PK), (planned, PLANNED_PK)):
        if function is None:
            continue
        function.add_environment(ENV_LEDGER_TABLE, ledger.table_name)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:PutItem"],
                resources=[ledger.table_arn],
                conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [partition]}},
            )
        )
    for grantee in others:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                sid="NoRecordersMarkers",
                effect=iam.Effect.DENY,
                actions=list(LEDGER_WRITES),
                resources=[ledger.table_arn],
                conditions={
                    "ForAnyValue:StringLike": {
                        "dynamodb:LeadingKeys": [
                            CLASSIFIED_PK,
                            PLANNED_PK,
                            REGISTRATION_PK_PREFIX + "*",
                        ]
                    }
                },
            )
        )
