"""The stack's names and outputs, and the state names others read from its executions."""

from __future__ import annotations

from typing import Final

# The stack ----------------------------------------------------------------------------------

STACK_NAME: Final = "nodemedic-{cluster}"
"""The CloudFormation stack of one cluster's pipeline; the CLI finds its resources by it."""
LEDGER_OUTPUT: Final = "LedgerTableName"
"""The stack's output naming the ledger table (``nodemedic breaker`` reads it)."""
STATE_MACHINE_OUTPUT: Final = "StateMachineArn"
"""The stack's output naming the remediation state machine (``nodemedic reboot|replace``
start it)."""
DEAD_LETTER_OUTPUT: Final = "DeadLetterQueueUrl"
"""The stack's output naming the dead-letter queue of the functions CloudWatch Logs and
EventBridge invoke (the classifier, the job monitor): ``nodemedic dlq`` reads it."""
DEAD_LETTER_ATTRIBUTES: Final = ("RequestID", "ErrorCode", "ErrorMessage")
"""The message attributes Lambda gives an event it sends to a function's dead-letter queue
after its retries (AWS's names): the failed request, the error's code and message."""
TOPIC_OUTPUT: Final = "TopicArn"
"""The stack's output naming the cluster's SNS topic (``nodemedic handoff`` mails it)."""
VERSION_OUTPUT: Final = "NodemedicVersion"
"""The stack's output naming the release it was synthesized from: what a rollback compares
with the agents' ``nodemedic_agent_info`` (docs/releasing.md)."""


def stack_name(cluster: str) -> str:
    return STACK_NAME.format(cluster=cluster)


DASHBOARD_NAME: Final = "nodemedic-{cluster}"
"""The cluster's CloudWatch dashboard (``nodemedic dashboard --html`` reads it)."""


def dashboard_name(cluster: str) -> str:
    return DASHBOARD_NAME.format(cluster=cluster)


FLEET_HELD_STATE: Final = "Fleet event"
"""The state a remediation held for a fleet event passes (the local world times it)."""
