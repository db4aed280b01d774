"""The cold-start benchmark imports a handler as Lambda's runtime does, so its figure is the
init a deployed function pays, not the X-Ray SDK's set-up for a process outside Lambda."""

from __future__ import annotations

from bench.coldstart import in_lambda

PROBE = """
import sys
import lambdas.classify.handler
from aws_xray_sdk.core import xray_recorder
from lambdas.observability import tracer
print(type(xray_recorder.sampler).__name__, tracer.disabled, "requests" in sys.modules)
"""


def test_the_classify_handler_is_imported_with_lambda_s_tracing_set_up() -> None:
    # In Lambda the sampling decision comes with the invocation: the recorder samples
    # locally and builds no X-Ray client; Powertools traces (it is not disabled), patching
    # what the handler calls through, without importing libraries it never uses.
    assert in_lambda(PROBE) == "LocalSampler False False"
