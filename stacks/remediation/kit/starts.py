"""A state machine starting a remediation with the native ``states:startExecution`` task: the
planned machine once a notice's lead time is over, the request reconcile for each labelled
node.

The execution is named by the decision, so ``ExecutionAlreadyExists`` means it was started
already: caught, never retried. Any other failure is retried. In a storm the start meets
Step Functions' ``StartExecution`` bucket (1,300, refilled at 300 a second in the largest
Regions, 800 and 150 elsewhere: docs.aws.amazon.com/step-functions/latest/dg/
service-quotas.html) and is throttled; without a retry a planned repair or a person's
request would be lost to the storm it was meant to outlast. The retry is on
``States.TaskFailed``, not a throttling error's name: the name Step Functions gives a
throttled start of this integration is not documented, and the start is idempotent.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

ALREADY_STARTED: Final = "StepFunctions.ExecutionAlreadyExistsException"
START_ATTEMPTS: Final = 6
"""Retries of a failed start, each up to twice as long after the one before (full jitter):
about a minute in all, long enough for the bucket's refill to reach the storm's last start."""


def start_remediation(
    scope: Construct,
    id: str,
    remediation: sfn.IStateMachine,
    *,
    name: str,
    input: sfn.TaskInput,
    already: sfn.IChainable,
) -> tasks.StepFunctionsStartExecution:
    """Start ``remediation`` as the execution ``name`` (a decision id) with ``input``, the
    decision as it is, with no parent id; ``already`` when it exists."""
    begin = tasks.StepFunctionsStartExecution(
        scope,
        id,
        state_machine=remediation,
        name=name,
        input=input,
        associate_with_parent=False,
        integration_pattern=sfn.IntegrationPattern.REQUEST_RESPONSE,
        result_path=sfn.JsonPath.DISCARD,
    )
    # Retriers are tried in order, the first that names the error decides: none for a start
    # that exists, then the catch below takes it.
    begin.add_retry(errors=[ALREADY_STARTED], max_attempts=0)
    begin.add_retry(
        errors=[sfn.Errors.TASKS_FAILED],
        max_attempts=START_ATTEMPTS,
        interval=Duration.seconds(1),
        backoff_rate=2,
        max_delay=Duration.seconds(30),
        jitter_strategy=sfn.JitterType.FULL,
    )
    begin.add_catch(already, errors=[ALREADY_STARTED], result_path=sfn.JsonPath.DISCARD)
    return begin
