"""Who may touch the ledger's heartbeat items: the classifier writes them, the kube Lambda
reads them and marks a silence notified. Both only in the ``HEARTBEAT_PK`` partition
(``dynamodb:LeadingKeys``), so neither gains a say over locks, breakers or decisions. The
kube Lambda also keeps the post-reboot gate's record (``GATE_PK``), which nothing else
writes."""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda

from nodemedic.contracts.env import ENV_LEDGER_TABLE
from nodemedic.contracts.ledger import GATE_PK, HEARTBEAT_PK


def hear_silence(
    ledger: dynamodb.ITable, *, classifier: aws_lambda.Function, kube: aws_lambda.Function
) -> None:
    for function, actions, partitions in (
        (classifier, ["dynamodb:UpdateItem"], [HEARTBEAT_PK]),
        (kube, ["dynamodb:Query", "dynamodb:UpdateItem"], [HEARTBEAT_PK, GATE_PK]),
    ):
        function.add_environment(ENV_LEDGER_TABLE, ledger.table_name)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=actions,
                resources=[ledger.table_arn],
                conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": partitions}},
            )
        )
