"""What the cost benchmark counts per service from the calls it sees: the figures
``bench/cost.py`` prices, so a miscount is a wrong bill."""

from __future__ import annotations

import json

import pytest

from bench.meter import EVENT_OVERHEAD, PLATFORM_LOG_BYTES, Meter, metering
from tests.support.payloads import wrap
from tests.support.worker_handlers import function
from world.aws.lambdaworkers import LambdaWorkers


def meter() -> Meter:
    return Meter(lambda message: "Xid" in message)


def test_logs_are_counted_by_stream_kind_at_message_bytes_plus_the_event_overhead() -> None:
    counting = meter()
    events = [{"message": "é" * 10}, {"message": "abc"}]  # UTF-8 bytes, not characters
    counting.logged("/nodemedic/demo/nodes", "i-1/kmsg", events)
    counting.logged("/nodemedic/demo/nodes", "i-1/health", [{"message": "{}"}])
    counting.logged("/aws/lambda/classify", "2026/11/24/[$LATEST]abc", [{"message": "x"}])
    counts = counting.counts()
    assert counts["log_bytes:kmsg"] == 20 + 3 + 2 * EVENT_OVERHEAD
    assert (counts["log_events:kmsg"], counts["log_puts:kmsg"]) == (2, 1)
    assert counts["log_bytes:health"] == 2 + EVENT_OVERHEAD
    assert counts["log_bytes:other"] == 1 + EVENT_OVERHEAD
    assert counting.sample == ["é" * 10, "abc", "{}"]  # the agents' lines only


@pytest.mark.parametrize(
    ("action", "body", "writes", "reads"),
    [
        ("PutItem", {"Item": {"pk": {"S": "a"}}}, 1, 0),
        # 2,100 bytes of item: three 1 KB write units.
        ("UpdateItem", {"Key": {"pk": {"S": "x" * 2100}}}, 3, 0),
        ("TransactWriteItems", {"TransactItems": [{}, {}]}, 4, 0),
        ("GetItem", {"Key": {}}, 0, 0.5),
        ("Query", {"ConsistentRead": True}, 0, 1),
    ],
)
def test_dynamodb_request_units_follow_the_action_and_item_size(
    action: str, body: dict[str, object], writes: float, reads: float
) -> None:
    counting = meter()
    counting.called("dynamodb", action, json.dumps(body))
    counts = counting.counts()
    assert (counts["write_units"], counts["read_units"]) == (writes, reads)
    assert counts[f"call:dynamodb:{action}"] == 1


def test_other_services_count_calls_and_no_request_units() -> None:
    counting = meter()
    counting.called("sns", "Publish", "Message=x")
    counting.called("sns", "Publish", "Message=y")
    counts = counting.counts()
    assert counts["call:sns:Publish"] == 2
    assert (counts["write_units"], counts["read_units"]) == (0, 0)


def delivery(*messages: str) -> dict[str, object]:
    events = [{"id": str(i), "timestamp": 0, "message": m} for i, m in enumerate(messages)]
    return wrap({"messageType": "DATA_MESSAGE", "logEvents": events})


def test_a_delivery_counts_only_when_a_line_passes_the_subscription_filter() -> None:
    counting = meter()
    counting.invoked("demo-classify-ABC", 256, 0.0101, delivery("NVRM: Xid 79", "noise"))
    counting.invoked("demo-classify-ABC", 256, 0.010, delivery("noise"))
    counting.invoked("demo-kube-DEF", 512, 0.5, {"op": "cordon"})
    counts = counting.counts()
    assert counts["lambda:delivery"] == 1
    assert counts["lambda:filtered"] == 1
    assert counts["lambda:invocation"] == 1
    assert counts["lambda:delivery:demo-classify"] == 1
    # Billed by the millisecond, rounded up, at the function's memory.
    assert counts["gb_seconds:delivery"] == pytest.approx(0.011 * 256 / 1024)
    assert counts["gb_seconds:invocation"] == pytest.approx(0.5 * 512 / 1024)


def test_printed_lines_count_with_lambda_s_own_lines_and_their_embedded_metrics() -> None:
    counting = meter()
    emf = {
        "_aws": {
            "CloudWatchMetrics": [
                {
                    "Namespace": "NodeMedic",
                    "Dimensions": [["Cluster", "Service"]],
                    "Metrics": [{"Name": "LinesClassified"}, {"Name": "FaultsFound"}],
                }
            ]
        }
    }
    line = json.dumps(emf)
    counting.printed(f"{line}\n\nnot json\n")
    assert counting.counts()["lambda_log_bytes"] == (
        len(line) + len("not json") + 2 * EVENT_OVERHEAD + PLATFORM_LOG_BYTES
    )
    assert counting.emf == {
        ("NodeMedic", "LinesClassified", "Cluster,Service"),
        ("NodeMedic", "FaultsFound", "Cluster,Service"),
    }


def test_an_invocation_in_a_worker_process_is_counted_with_what_it_printed() -> None:
    counting = meter()
    workers = LambdaWorkers(per_function=1)
    try:
        with metering(counting):
            workers.invoke(function("echo", name="nodemedic-classify"), {"node": "i-0a"})
    finally:
        workers.close()
    counts = counting.counts()
    assert counts["lambda:invocation"] == 1 and counts["lambda:invocation:nodemedic"] == 1
    assert counts["seconds:invocation"] > 0
    # The printed line and Lambda's own START, END and REPORT lines.
    assert counts["lambda_log_bytes"] > PLATFORM_LOG_BYTES
