"""moto's Step Functions parse each JSONPath once, build each definition's program once and
make each task's client once in the local world, and a task's AWS call is answered in the
world's process, not over HTTP: each was in turn the execution threads' largest cost in a
1,500-node storm, and what they give must stay the same."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.stepfunctions.parser.asl.utils import json_path
from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for

from tests.support.remediation import MOTO
from tests.support.tables import create_pk_table
from world.aws.motopatch import JSONPATH_PARSE, PARSE_DEFINITION
from world.aws.motoserver import moto_server
from world.aws.stepfunctions import (
    clients_made_once,
    definitions_parsed_once,
    paths_parsed_once,
)

STATE = {"node": {"instance_id": "i-0a", "taints": [{"key": "a"}, {"key": "b"}]}}


def test_a_path_is_parsed_once_and_finds_what_moto_s_own_parse_finds() -> None:
    own = [json_path.extract_json(p, STATE) for p in ("$.node.instance_id", "$.node.taints[1]")]
    # moto's own parse: a new one every time.
    assert JSONPATH_PARSE.current()("$.node") is not JSONPATH_PARSE.current()("$.node")

    with paths_parsed_once():
        once = [
            json_path.extract_json(p, STATE) for p in ("$.node.instance_id", "$.node.taints[1]")
        ]
        assert JSONPATH_PARSE.current()("$.node") is JSONPATH_PARSE.current()("$.node")

    assert once == own == ["i-0a", {"key": "b"}]


def test_a_tasks_client_is_made_once_per_service_and_region() -> None:
    assert boto_client_for("us-east-1", "dynamodb") is not boto_client_for("us-east-1", "dynamodb")

    with clients_made_once():
        dynamodb = boto_client_for("us-east-1", "dynamodb")
        assert boto_client_for("us-east-1", "dynamodb") is dynamodb
        assert boto_client_for("us-west-2", "dynamodb") is not dynamodb
        assert boto_client_for("us-east-1", "lambda") is not dynamodb
        assert dynamodb.meta.region_name == "us-east-1"


def test_a_tasks_call_is_answered_in_process_by_the_backends_the_server_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The state a task reads is the one the world's clients write over HTTP; the task's own
    call reaches no server (each such request cost twice the CPU of one answered here)."""
    served: list[str] = []
    own_call = DomainDispatcherApplication.__call__

    def counted(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        served.append(environ.get("PATH_INFO", ""))
        return own_call(self, environ, start_response)

    monkeypatch.setattr(DomainDispatcherApplication, "__call__", counted)
    with moto_server() as endpoint:
        world = boto3.client("dynamodb", endpoint_url=endpoint)
        create_pk_table(world, "ledger")
        world.put_item(TableName="ledger", Item={"pk": {"S": "i-0a"}, "state": {"S": "open"}})
        served.clear()

        task = boto_client_for("us-east-1", "dynamodb")
        item = task.get_item(TableName="ledger", Key={"pk": {"S": "i-0a"}})["Item"]
        during = list(served)

    assert item["state"] == {"S": "open"}
    assert during == []


def test_under_mock_aws_a_tasks_call_is_made_once() -> None:
    """botocore asks every handler of a request for its answer: with moto's own
    interceptor on, the world's must step aside, or each write is made twice."""
    key = {"pk": {"S": "i-0a"}}
    with mock_aws(), clients_made_once():
        world = boto3.client("dynamodb", region_name="us-east-1")
        create_pk_table(world, "counts")
        boto_client_for("us-east-1", "dynamodb").update_item(
            TableName="counts",
            Key=key,
            UpdateExpression="ADD tries :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        tries = world.get_item(TableName="counts", Key=key)["Item"]["tries"]

    assert tries == {"N": "1"}


RETRIED = json.dumps(
    {
        "StartAt": "Read",
        "States": {
            "Read": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:getItem",
                "Parameters": {"TableName": "absent", "Key": {"pk": {"S.$": "$.node"}}},
                "Retry": [
                    {
                        "ErrorEquals": ["States.ALL"],
                        "IntervalSeconds": 1,
                        "MaxAttempts": 2,
                        "BackoffRate": 1,
                    }
                ],
                "End": True,
            }
        },
    }
)
"""A read of a table that is not there: it fails, and is tried twice again."""


def test_a_definitions_program_is_built_once_and_each_execution_counts_its_own_retries() -> None:
    with mock_aws(config=MOTO), definitions_parsed_once():
        parse = PARSE_DEFINITION.current()
        assert parse(RETRIED)[0] is parse(RETRIED)[0]

        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        machine = sfn.create_state_machine(
            name="retried",
            definition=RETRIED,
            roleArn="arn:aws:iam::123456789012:role/sfn",
        )["stateMachineArn"]
        runs = [
            sfn.start_execution(
                stateMachineArn=machine, name=node, input=json.dumps({"node": node})
            )
            for node in ("i-0a", "i-0b", "i-0c")
        ]
        deadline = time.monotonic() + 120
        while any(
            sfn.describe_execution(executionArn=run["executionArn"])["status"] == "RUNNING"
            for run in runs
        ):
            assert time.monotonic() < deadline, "the executions did not end"
            time.sleep(0.2)
        tries = [
            sum(
                event["type"] == "TaskScheduled"
                for event in sfn.get_execution_history(executionArn=run["executionArn"])["events"]
            )
            for run in runs
        ]

    assert tries == [3, 3, 3]
