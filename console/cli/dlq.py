"""``nodemedic dlq list|replay --cluster NAME``: what reached the stack's dead-letter queue
(log batches the classifier or the job monitor failed on after Lambda's retries, a job
monitor's scheduled run), and its redrive.

``list`` shows each message (id, when it was dead-lettered, the function it failed in, the
error Lambda recorded, what it carried); ``replay [ID]`` invokes that function with the
message's body as it was, one message or all, and deletes a message only once its replay
succeeded: one that fails again stays, with the new error shown. Both print a table, or
with ``--format json`` one object (docs/troubleshooting.md, "Dead letters"). Exit 0, or 1
when a replay failed or the ID is not in the queue, 2 when the queue cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

from console.cli.deadletters import (
    DeadLetter,
    function_of,
    iso,
    receive_all,
    release,
    replay,
)
from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.stack import DEAD_LETTER_OUTPUT

LIST_SECONDS = 30
"""How long ``list`` holds the messages out of sight while it reads them all."""
REPLAY_SECONDS = 900
"""How long ``replay`` holds a message: a function's longest run (Lambda's limit)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("verb", choices=("list", "replay"), help="show, or redrive")
    parser.add_argument("id", nargs="?", help="replay: one message's id (default: every one)")
    add_aws_options(parser)
    parser.add_argument(
        "--queue", help=f"the queue's URL (default: output {DEAD_LETTER_OUTPUT} of its stack)"
    )
    parser.add_argument(
        "--function",
        help="replay: the function to invoke where the message does not say (its payload "
        "is no log batch nor scheduled event)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def shown(letter: DeadLetter, function: str | None) -> dict[str, Any]:
    """One message in ``--format json`` (keys only grow)."""
    p = letter.payload
    return {
        "id": letter.id,
        "sent_at": iso(letter.sent_at),
        "function": function,
        "request_id": letter.request_id,
        "error_code": letter.error_code,
        "error": letter.error,
        "receive_count": letter.receive_count,
        "payload": {
            "kind": p.kind,
            "source": p.source,
            "log_stream": p.log_stream,
            "subscription_filter": p.subscription_filter,
            "events": p.events,
            "first_line": p.first_line,
            "size": p.size,
        },
    }


def summary(payload: dict[str, Any]) -> str:
    if payload["kind"] == "awslogs":
        first = f": {payload['first_line']}" if payload["first_line"] else ""
        return f"{payload['source']} {payload['log_stream']}, {payload['events']} line(s){first}"
    if payload["kind"] == "scheduled":
        return f"scheduled run of {payload['source'] or 'an unnamed rule'}"
    return f"unknown payload, {payload['size']} characters"


def _name(function: str | None) -> str:
    return "?" if function is None else function.rsplit(":", 1)[-1]


def _table(rows: list[dict[str, Any]], extra: str | None = None) -> str:
    lines = []
    for row in rows:
        head = f"{row['id']}  {row['sent_at']}  {_name(row['function'])}"
        if extra is not None:
            head += f"  {row[extra]}"
        lines.append(head)
        lines.append(f"    payload: {summary(row['payload'])}")
        lines.append(f"    error:   {row['error'] or '(none recorded)'}")
    return "\n".join(lines)


def list_letters(sqs: Any, queue: str, function: Callable[[DeadLetter], str | None]) -> list[Any]:
    """Every message, oldest first, each given back to the queue once read."""
    letters = list(receive_all(sqs, queue, LIST_SECONDS))
    for letter in letters:
        release(sqs, queue, letter)
    return [shown(x, function(x)) for x in sorted(letters, key=lambda x: (x.sent_at, x.id))]


def replay_letters(
    sqs: Any,
    functions: Any,
    queue: str,
    wanted: str | None,
    function: Callable[[DeadLetter], str | None],
) -> list[dict[str, Any]]:
    """Each wanted message replayed in turn: deleted once its function succeeded, given
    back to the queue otherwise, as every message not wanted is, at the end."""
    results, kept = [], []
    # A message not replayed now stays out of sight until the end, so it is not read again.
    for letter in receive_all(sqs, queue, REPLAY_SECONDS):
        if wanted is not None and letter.id != wanted:
            kept.append(letter)
            continue
        target = function(letter)
        row = shown(letter, target)
        error = "no function to replay it to (--function)" if target is None else None
        if target is not None:
            error = replay(functions, target, letter)
        if error is None:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=letter.receipt)
        else:
            kept.append(letter)
        results.append({**row, "replayed": error is None, "replay_error": error})
        if wanted is not None:
            break
    for letter in kept:
        release(sqs, queue, letter)
    return results


def run(args: argparse.Namespace) -> int:
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    aws = session(args)

    @cache
    def client(service: str) -> Any:
        # A replay waits for the function's result, as long as it runs, and is never sent
        # twice: a retried invocation would redrive the batch twice.
        config = Config(read_timeout=REPLAY_SECONDS + 10, retries={"total_max_attempts": 1})
        options = {"config": config} if service == "lambda" else {}
        return aws.client(service, endpoint_url=args.endpoint_url, **options)

    def function(letter: DeadLetter) -> str | None:
        return function_of(client, letter.payload) or args.function

    try:
        queue = args.queue or stack_output(
            client("cloudformation"), args.cluster, DEAD_LETTER_OUTPUT
        )
        if args.verb == "list":
            rows = list_letters(client("sqs"), queue, function)
        else:
            rows = replay_letters(client("sqs"), client("lambda"), queue, args.id, function)
    except (BotoCoreError, ClientError, LookupError) as exc:
        print(f"nodemedic dlq: {exc}", file=sys.stderr)
        return 2
    failed = args.verb == "replay" and (
        any(not r["replayed"] for r in rows) or (args.id is not None and not rows)
    )
    if args.format == "json":
        key = "messages" if args.verb == "list" else "replayed"
        print(json.dumps({"cluster": args.cluster, "queue": queue, key: rows}, sort_keys=True))
    elif args.verb == "list":
        print(_table(rows) if rows else "the dead-letter queue is empty")
    else:
        for row in rows:
            row["outcome"] = "replayed, deleted" if row["replayed"] else "failed again, kept"
            if not row["replayed"]:
                row["error"] = row["replay_error"]
        empty = (
            f"no message {args.id} in the queue" if args.id else "the dead-letter queue is empty"
        )
        print(_table(rows, "outcome") if rows else empty)
    return 1 if failed else 0
