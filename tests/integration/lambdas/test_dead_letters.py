"""``nodemedic dlq`` on moto: a log batch the classifier failed on (its idempotency table
missing) waits in the dead-letter queue, is listed with its function and error, is kept by
a replay that fails again, and once the table is back is redriven: the fault is classified
and the queue is empty.

moto keeps no ``DeadLetterConfig`` and retries nothing, so the test sends the failed event to
the queue as Lambda does after its retries: the event as it was, the error in the message
attributes Lambda names (``nodemedic.contracts.stack.DEAD_LETTER_ATTRIBUTES``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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
from nodemedic.contracts.stack import DEAD_LETTER_ATTRIBUTES
from tests.support.payloads import decoded, wrap
from world.aws.inprocess import handlers_in_process

REGION = "us-east-1"
GROUP = "/nodemedic/demo/nodes"
FILTER = "nodemedic-faults"
TABLE = "nodemedic-demo-idempotency"
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


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The parts of a cluster's stack a dead letter passes: the classifier behind the node
    log group's subscription filter, its queue, the state machine it starts."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws(), handlers_in_process():
        role = boto3.client("iam").create_role(
            RoleName="classifier", AssumeRolePolicyDocument=ROLE
        )["Role"]["Arn"]
        machine = boto3.client("stepfunctions").create_state_machine(
            name="remediate",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn=role,
        )["stateMachineArn"]
        function = boto3.client("lambda").create_function(
            FunctionName="nodemedic-demo-classifier",
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
        queue = boto3.client("sqs").create_queue(QueueName="nodemedic-demo-dead-letters")
        yield {"function": function, "machine": machine, "queue": queue["QueueUrl"]}


def dead_lettered(stack: dict[str, str], event: dict[str, Any]) -> None:
    """The subscription's delivery of ``event`` fails; Lambda sends it to the queue."""
    response = boto3.client("lambda").invoke(
        FunctionName=stack["function"], InvocationType="RequestResponse", Payload=json.dumps(event)
    )
    assert response.get("FunctionError"), "the delivery must fail"
    error = json.loads(response["Payload"].read())
    values = ("1f0e7d7c-request", "200", error["errorMessage"])
    boto3.client("sqs").send_message(
        QueueUrl=stack["queue"],
        MessageBody=json.dumps(event),
        MessageAttributes={
            name: {"DataType": "String", "StringValue": value}
            for name, value in zip(DEAD_LETTER_ATTRIBUTES, values, strict=True)
        },
    )


def dlq(stack: dict[str, str], *args: str, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = main(["dlq", *args, "--cluster=demo", f"--queue={stack['queue']}", "--format=json"])
    # The last line: the in-process handler a replay runs prints its metrics (EMF) first.
    return code, json.loads(capsys.readouterr().out.splitlines()[-1])


def executions(stack: dict[str, str]) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=stack["machine"])["executions"]
    return [
        json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"]) for e in listed
    ]


def test_a_failed_batch_is_listed_kept_by_a_failed_replay_and_redriven(
    stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    data = {**decoded("xid79-with-noise.json"), "logGroup": GROUP, "subscriptionFilters": [FILTER]}
    dead_lettered(stack, wrap(data))

    code, listed = dlq(stack, "list", capsys=capsys)
    assert code == 0
    [message] = listed["messages"]
    assert message["function"] == stack["function"]
    assert "ResourceNotFoundException" in message["error"], message["error"]
    assert message["error_code"] == "200"
    assert message["payload"]["kind"] == "awslogs"
    assert message["payload"]["source"] == GROUP
    assert message["payload"]["events"] == len(data["logEvents"])
    assert message["payload"]["first_line"] == data["logEvents"][0]["message"]
    assert main(["dlq", "list", "--cluster=demo", f"--queue={stack['queue']}"]) == 0
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

    boto3.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    code, shown = dlq(stack, "replay", message["id"], capsys=capsys)
    assert code == 0
    assert [(r["id"], r["replayed"]) for r in shown["replayed"]] == [(message["id"], True)]
    [decision] = executions(stack)
    assert decision["fault_id"] == "nvidia-xid-79"
    assert decision["instance_id"] == data["logStream"].split("/")[0]
    assert dlq(stack, "list", capsys=capsys)[1]["messages"] == []


def test_a_payload_that_names_no_function_is_kept_unless_one_is_given(
    stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("sqs").send_message(QueueUrl=stack["queue"], MessageBody='{"not": "a batch"}')
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
