"""cdk-nag (AwsSolutions) acknowledgments: each accepted finding sits next to what it
accepts, with its reason, and the synth's validation report lists them all."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

XRAY = (
    "X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level permissions; "
    "the role holds nothing else on '*'"
)


def acknowledge(construct: IConstruct, finding: str, reason: str) -> None:
    """Accept one cdk-nag finding on ``construct`` and its children, with the reason."""
    Validations.of(construct).acknowledge(
        Acknowledgment(id=f"AwsSolutions::AwsSolutions-{finding}", reason=reason)
    )
