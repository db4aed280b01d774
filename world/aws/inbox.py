"""The notifications topic read through an SQS subscription, as a person's mail would be."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Notification:
    """One SNS message: its subject, its JSON body and when SNS delivered it."""

    subject: str
    body: dict[str, Any] = field(hash=False)
    sent_at: float
    """Epoch seconds (the SQS ``SentTimestamp``)."""

    @property
    def instance_id(self) -> str | None:
        value = self.body.get("instance_id")
        return value if isinstance(value, str) else None

    @property
    def outcome(self) -> str | None:
        value = self.body.get("outcome")
        return value if isinstance(value, str) else None


class Inbox:
    """Subscribes a queue to ``topic_arn``; ``messages`` drains it into ``received``."""

    def __init__(self, sns: Any, sqs: Any, topic_arn: str, name: str = "nodemedic-inbox") -> None:
        self.sqs = sqs
        self.url: str = sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
        self.received: list[Notification] = []
        self._lock = threading.Lock()

    def messages(self) -> list[Notification]:
        """Everything received so far, oldest first."""
        with self._lock:
            while True:
                batch = self.sqs.receive_message(
                    QueueUrl=self.url, MaxNumberOfMessages=10, AttributeNames=["SentTimestamp"]
                ).get("Messages", [])
                if not batch:
                    break
                for message in batch:
                    self.received.append(_notification(message))
                    self.sqs.delete_message(
                        QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"]
                    )
            self.received.sort(key=lambda n: n.sent_at)
            return list(self.received)

    def about(self, instance_id: str) -> list[Notification]:
        return [n for n in self.messages() if n.instance_id == instance_id]


def _notification(message: dict[str, Any]) -> Notification:
    envelope = json.loads(message["Body"])
    try:
        body = json.loads(envelope["Message"])
    except (TypeError, ValueError):
        body = {"text": envelope.get("Message")}
    sent_ms = int(message.get("Attributes", {}).get("SentTimestamp", "0"))
    return Notification(
        subject=str(envelope.get("Subject") or ""),
        body=body if isinstance(body, dict) else {"value": body},
        sent_at=sent_ms / 1000,
    )
