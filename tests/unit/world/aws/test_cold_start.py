"""Each world's in-process Lambdas start cold: nothing an earlier world's handlers made,
boto3's default session included, reaches the next one's."""

from __future__ import annotations

import os

import boto3
import pytest

from world.aws.inprocess import ThreadEnviron, handlers_in_process


def test_a_handler_reads_its_own_functions_region_after_an_earlier_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    # A default session made outside this world: a straggling thread of the last one, or
    # the test before, reads the environment it was made under for ever after.
    boto3.setup_default_session()

    with handlers_in_process():
        environ = os.environ
        assert isinstance(environ, ThreadEnviron)
        with environ.overlay({"AWS_DEFAULT_REGION": "eu-west-1"}):
            client = boto3.client("autoscaling")

    assert client.meta.region_name == "eu-west-1"
