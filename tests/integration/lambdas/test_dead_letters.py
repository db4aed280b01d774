"""A log batch the classifier failed on (its idempotency table missing) is run again as
Lambda runs a failed asynchronous invocation, then waits in the dead-letter queue
(``world.aws.quotas``); ``nodemedic dlq`` lists it with its function and error, keeps it
through a replay that fails again, and once the table is back redrives it: the fault is
classified and the queue is empty. A batch whose retry finds the table is never lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from console.cli import main
from nodemedic.contracts.env import (
    ENV_IDEMPOTENCY_TABLE,
    ENV_PROOF_OF_ORIGIN,
    ENV_STATE_MACHINE_ARN,
)
from tests.support.kube import wait_for
from tests.support.payloads import decoded
from world.aws.inprocess import handlers_in_process
from world.aws.quotas import DEAD_LETTERS, Deliveries, asynchronous_retries

REGION = "us-east-1"
GROUP = "/nodemedic/demo/nodes"
FILTER = "nodemedic-faults"
TABLE = "nodemedic-demo-idempotency"
FUNCTION = "nodemedic-demo-classifier"
RETRIES = (0.2, 10.0)
"""Lambda's waits between the runs of a failed delivery, shortened (a minute, then two); the
last is long enough for a busy machine's test to make the table the retry finds."""
ROLE = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


@dataclass(frozen=True)
class Stack:
    function: str
    machine: str
    queue: str
    deliveries: Deliveries


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """The parts of a cluster's stack a dead letter passes: the classifier behind the node
    log group's subscription filter, its queue, the state machine it starts."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    deliveries = Deliveries(delays=RETRIES)
    with mock_aws(), handlers_in_process(), asynchronous_retries(deliveries):
        role = boto3.client("iam").create_role(
            RoleName="classifier", AssumeRolePolicyDocument=ROLE
        )["Role"]["Arn"]
        machine = boto3.client("stepfunctions").create_state_machine(
            name="remediate",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn=role,
        )["stateMachineArn"]
        function = boto3.client("lambda").create_function(
            FunctionName=FUNCTION,
            Runtime="python3.11",
            Role=role,
            Handler="lambdas.classify.handler.handler",
            Code={"ZipFile": b"in process"},
            Timeout=30,
            Environment={
                "Variables": {
                    ENV_STATE_MACHINE_ARN: machine,
                    ENV_IDEMPOTENCY_TABLE: TABLE,
                    # Unsigned lines: proof of origin is tested where it is enforced.
                    ENV_PROOF_OF_ORIGIN: "audit",
                }
            },
        )["FunctionArn"]
        logs = boto3.client("logs")
        logs.create_log_group(logGroupName=GROUP)
        logs.put_subscription_filter(
            logGroupName=GROUP, filterName=FILTER, filterPattern="", destinationArn=function
        )
        sqs = boto3.client("sqs")
        queue = sqs.create_queue(QueueName="nodemedic-demo-dead-letters")["QueueUrl"]
        # The function's DeadLetterConfig, as the world's CloudFormation keeps it.
        DEAD_LETTERS[FUNCTION] = sqs.get_queue_attributes(
            QueueUrl=queue, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        yield Stack(function, machine, queue, deliveries)


def shipped(data: dict[str, Any]) -> None:
    """The batch's lines, written to the node's stream now: the subscription delivers them."""
    logs = boto3.client("logs")
    logs.create_log_stream(logGroupName=GROUP, logStreamName=data["logStream"])
    now = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName=data["logStream"],
        logEvents=[{"timestamp": now, "message": e["message"]} for e in data["logEvents"]],
    )


def create_table() -> None:
    boto3.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def dlq(stack: Stack, *args: str, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = main(["dlq", *args, "--cluster=demo", f"--queue={stack.queue}", "--format=json"])
    # The last line: the in-process handler a replay runs prints its metrics (EMF) first.
    return code, json.loads(capsys.readouterr().out.splitlines()[-1])


def executions(stack: Stack) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=stack.machine)["executions"]
    return [
        json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"]) for e in listed
    ]


def test_a_failed_batch_is_listed_kept_by_a_failed_replay_and_redriven(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    data = decoded("xid79-with-noise.json")
    shipped(data)

    [message] = wait_for(
        lambda: dlq(stack, "list", capsys=capsys)[1]["messages"],
        timeout=60,
        what="the batch in the dead-letter queue after its three runs",
    )
    assert (stack.deliveries.failed, stack.deliveries.dead_lettered) == (3, 1)
    assert message["function"] == stack.function
    assert "ResourceNotFoundException" in message["error"], message["error"]
    assert message["error_code"] == "200"
    assert message["payload"]["kind"] == "awslogs"
    assert message["payload"]["source"] == GROUP
    assert message["payload"]["events"] == len(data["logEvents"])
    assert message["payload"]["first_line"] == data["logEvents"][0]["message"]
    assert main(["dlq", "list", "--cluster=demo", f"--queue={stack.queue}"]) == 0
    table = capsys.readouterr().out
    for shown in (message["id"], "nodemedic-demo-classifier", "ResourceNotFoundException", GROUP):
        assert shown in table

    # The table is still missing: the replay fails again and the message stays.
    code, shown = dlq(stack, "replay", message["id"], capsys=capsys)
    assert code == 1
    [failed] = shown["replayed"]
    assert failed["replayed"] is False
    assert failed["replay_error"]
    assert [m["id"] for m in dlq(stack, "list", capsys=capsys)[1]["messages"]] == [message["id"]]
    assert executions(stack) == []

    create_table()
    code, shown = dlq(stack, "replay", message["id"], capsys=capsys)
    assert code == 0
    assert [(r["id"], r["replayed"]) for r in shown["replayed"]] == [(message["id"], True)]
    [decision] = executions(stack)
    assert decision["fault_id"] == "nvidia-xid-79"
    assert decision["instance_id"] == data["logStream"].split("/")[0]
    assert dlq(stack, "list", capsys=capsys)[1]["messages"] == []


def test_a_payload_that_names_no_function_is_kept_unless_one_is_given(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("sqs").send_message(QueueUrl=stack.queue, MessageBody='{"not": "a batch"}')
    code, shown = dlq(stack, "replay", capsys=capsys)
    assert code == 1
    [kept] = shown["replayed"]
    assert (kept["function"], kept["payload"]["kind"], kept["replayed"]) == (
        None,
        "unknown",
        False,
    )
    code, shown = dlq(stack, "replay", "00000000-not-there", capsys=capsys)
    assert (code, shown["replayed"]) == (1, [])
    assert len(dlq(stack, "list", capsys=capsys)[1]["messages"]) == 1


def test_a_batch_whose_retry_finds_the_table_is_classified_and_never_dead_lettered(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    data = decoded("xid79-with-noise.json")
    shipped(data)
    wait_for(lambda: stack.deliveries.failed, timeout=60, what="the first run failed")

    create_table()

    [decision] = wait_for(lambda: executions(stack), timeout=60, what="a retry classified it")
    assert decision["fault_id"] == "nvidia-xid-79"
    assert stack.deliveries.dead_lettered == 0
    assert dlq(stack, "list", capsys=capsys)[1]["messages"] == []
