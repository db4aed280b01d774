"""The context a test hands a Lambda handler it calls directly: the one the in-process
runner builds (``world.aws.lambdacall.Context``), for a function of this project."""

from __future__ import annotations

from typing import cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from world.aws.lambdacall import Context

REGION = "us-east-1"


def lambda_context(function: str, *, memory_mb: int, timeout_seconds: int) -> LambdaContext:
    """The context of ``nodemedic-<function>``; Powertools reads its name, memory and the
    time left (the whole timeout: the call has just begun)."""
    name = f"nodemedic-{function}"
    return cast(
        LambdaContext,
        Context(
            function_name=name,
            function_version="$LATEST",
            invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:{name}",
            memory_limit_in_mb=memory_mb,
            aws_request_id="test-request",
            log_group_name=f"/aws/lambda/{name}",
            log_stream_name="local",
            timeout_seconds=timeout_seconds,
        ),
    )
