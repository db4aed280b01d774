"""What one AWS call of a state machine's task costs the local world, answered in its process
(``world.aws.stepfunctions.clients_made_once``) beside the baseline of the same call over
HTTP to the moto server that runs in that same process, as tasks made it before.

At 1,500 nodes the world's one process bound the storm (docs/scale.md), and every SDK and
Lambda task of every execution is such a call: some 30 before a node is cordoned. Both
paths go through botocore and moto's request handlers; the baseline adds a socket, a server
thread and an HTTP parse on both sides. The figure is the process's CPU time a call (client
and server are both this process) and the calls a second, with ``--threads`` calling at
once as a storm's executions do. Rounds alternate (ABAB) so that a machine's load changes
weigh on both alike.

    python -m bench.sdkcalls [--calls N] [--threads T] [--rounds R]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for

from world.aws.motoserver import REGION, moto_server

TABLE = "ledger"
ITEMS = 50


def _round(client: Any, calls: int, threads: int) -> tuple[float, float]:
    """CPU-milliseconds a GetItem and GetItems a second, over ``calls`` calls."""

    def one(number: int) -> None:
        client.get_item(TableName=TABLE, Key={"pk": {"S": f"i-{number % ITEMS:04}"}})

    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(calls)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return 1000 * cpu / calls, calls / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with moto_server() as endpoint:
        world = boto3.client("dynamodb", endpoint_url=endpoint)
        world.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for number in range(ITEMS):
            item = {"pk": {"S": f"i-{number:04}"}, "state": {"S": "open" * 50}}
            world.put_item(TableName=TABLE, Item=item)
        # The baseline: the client a task had, addressed to the server (moto's own
        # configuration for it, boto_client_for; the world's credentials).
        over_http = boto3.client(
            "dynamodb",
            endpoint_url=endpoint,
            config=Config(
                parameter_validation=False,
                retries={"max_attempts": 0, "total_max_attempts": 1},
            ),
        )
        paths = (
            ("over HTTP (baseline)", over_http),
            ("in process", boto_client_for(REGION, "dynamodb")),
        )
        print(f"a task's GetItem, {args.calls} calls a round, {args.threads} threads at once")
        for _ in range(args.rounds):
            for name, client in paths:
                cpu_ms, rate = _round(client, args.calls, args.threads)
                print(f"  {name:22} {cpu_ms:6.2f} CPU-ms a call  {rate:7.0f} calls/s")


if __name__ == "__main__":
    main()
