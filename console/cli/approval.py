"""``nodemedic approve|deny EXECUTION --reason TEXT --cluster NAME``: the answer to a
remediation that waits for a person (``nodemedic.remediate.approval``).

EXECUTION is the remediation's execution, by name (the decision id the request's mail
names) or ARN. The command reads the decision's ledger record, where the flow keeps the task
token it waits on, writes who answers (the caller's STS identity) and why on that record,
then answers: SendTaskSuccess, or SendTaskFailure with ``ApprovalDenied``. The right to
answer is IAM's: ``states:SendTaskSuccess``/``SendTaskFailure`` and ``dynamodb:UpdateItem``
on the ledger. Exit 0: answered; 2: bad input, or AWS could not be reached or refused;
3: the remediation does not wait for an answer (any more).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.ledger import APPROVAL_TOKEN
from nodemedic.contracts.stack import LEDGER_OUTPUT, STATE_MACHINE_OUTPUT
from nodemedic.remediate import approval
from nodemedic.remediate.breaker import plain_item
from nodemedic.remediate.ledger import RECORD_SK, key

ANSWERED_BY = {"approve": "approved_by", "deny": "denied_by"}
"""The record's field naming who gave each answer."""


class NotAwaiting(LookupError):
    """The execution waits for no answer: it ended, or is at another step."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("execution", help="the remediation's execution name or ARN")
    parser.add_argument("--reason", required=True, help="why, for the ledger and the flow")
    add_aws_options(parser)
    parser.add_argument("--format", choices=("table", "json"), default="table")


def execution_arn(machine: str, execution: str) -> str:
    """The ARN of ``execution`` (a name, or an ARN already) of the state machine ``machine``."""
    if execution.startswith("arn:"):
        return execution
    return f"{machine.replace(':stateMachine:', ':execution:', 1)}:{execution}"


def awaiting(sfn: Any, dynamodb: Any, table: str, arn: str) -> tuple[dict[str, Any], str]:
    """The ledger key of the execution's decision record and the task token it waits on."""
    described = sfn.describe_execution(executionArn=arn)
    if described["status"] != "RUNNING":
        raise NotAwaiting(f"execution {described['name']} is {described['status'].lower()}")
    decision = json.loads(described["input"])
    record_key = key(
        {"S": decision["instance_id"]}, {"S": RECORD_SK.format(decision["decision_id"])}
    )
    found = dynamodb.get_item(TableName=table, Key=record_key, ConsistentRead=True).get("Item")
    record = plain_item(found or {})
    if record.get("state") != approval.AWAITING or APPROVAL_TOKEN not in record:
        raise NotAwaiting(
            f"execution {described['name']} awaits no approval (its record is "
            f"{record.get('state', 'not written yet')})"
        )
    return record_key, str(record[APPROVAL_TOKEN])


def answer(args: argparse.Namespace, aws: Any, *, machine: str, table: str) -> dict[str, Any]:
    """Record who answers and why, then answer the flow; what the command prints."""
    sfn = aws.client("stepfunctions", endpoint_url=args.endpoint_url)
    dynamodb = aws.client("dynamodb", endpoint_url=args.endpoint_url)
    arn = execution_arn(machine, args.execution)
    record_key, token = awaiting(sfn, dynamodb, table, arn)
    who = str(aws.client("sts", endpoint_url=args.endpoint_url).get_caller_identity()["Arn"])
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    dynamodb.update_item(
        TableName=table,
        Key=record_key,
        UpdateExpression="SET #by = :by, approval_reason = :reason, answered_at = :at",
        ConditionExpression="#token = :token",
        ExpressionAttributeNames={"#by": ANSWERED_BY[args.command], "#token": APPROVAL_TOKEN},
        ExpressionAttributeValues={
            ":by": {"S": who},
            ":reason": {"S": args.reason},
            ":at": {"S": at},
            ":token": {"S": token},
        },
    )
    said = approval.answer(who, args.reason)
    if args.command == "approve":
        sfn.send_task_success(taskToken=token, output=json.dumps(said))
    else:
        sfn.send_task_failure(
            taskToken=token,
            error=approval.DENIED_ERROR,
            cause=f"denied by {who}: {args.reason}",
        )
    return {"execution_arn": arn, "answer": args.command, "answered_at": at, **said}


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        aws = session(args)
        cloudformation = aws.client("cloudformation", endpoint_url=args.endpoint_url)
        shown = answer(
            args,
            aws,
            machine=stack_output(cloudformation, args.cluster, STATE_MACHINE_OUTPUT),
            table=stack_output(cloudformation, args.cluster, LEDGER_OUTPUT),
        )
    except NotAwaiting as exc:
        print(f"nodemedic {args.command}: {exc}", file=sys.stderr)
        return 3
    except (BotoCoreError, ClientError, LookupError, ValueError) as exc:
        print(f"nodemedic {args.command}: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(shown, sort_keys=True))
    else:
        done = "approved" if args.command == "approve" else "denied"
        print(f"{done} {shown['execution_arn']} as {shown['by']}: {shown['reason']}")
    return 0
