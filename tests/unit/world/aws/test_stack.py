"""What the demo says of the stack it deployed: the template's count, and what it left out."""

from __future__ import annotations

from world.aws.cloudformation import Deployment, Resource
from world.aws.resources import SKIPPED
from world.aws.stack import resource_count


def test_the_demo_counts_the_templates_resources_and_names_what_it_left_out() -> None:
    made = {f"Queue{n}": Resource(f"Queue{n}", "AWS::SQS::Queue", f"q{n}") for n in range(3)}
    deployment = Deployment(
        "nodemedic-demo",
        "us-east-1",
        "123456789012",
        resources=made,
        skipped={"CDKMetadata": SKIPPED["AWS::CDK::Metadata"]},
    )
    assert resource_count(deployment) == (
        "3 of the template's 4 resources (1 the world does without: AWS::CDK::Metadata)"
    )
    assert resource_count(Deployment("s", "r", "a", resources=made)) == "3 resources"
