"""The instance identity comes from IMDSv2 (here the moto server's metadata endpoint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.imds import IdentityError, instance_identity, instance_type
from nodemedic.contracts.env import ENV_IMDS_ENDPOINT
from nodemedic.contracts.logs import shipped_message
from tests.support.agent import REGION, agent_process, free_port, messages, wait_for

MOTO_INSTANCE_ID = "i-fake"  # what moto's metadata endpoint says


def test_instance_id_and_region_from_imdsv2(moto_url: str) -> None:
    assert instance_identity(moto_url) == (MOTO_INSTANCE_ID, REGION)


def test_instance_type_from_imdsv2_and_none_off_ec2(moto_url: str) -> None:
    """moto's answer is a type no table knows, so its agents expect no devices."""
    assert instance_type(moto_url) == "moto.virtual"
    assert instance_type(f"http://127.0.0.1:{free_port()}", timeout=0.5) == ""


def test_off_ec2_the_error_says_which_flags_to_pass() -> None:
    with pytest.raises(IdentityError, match="pass --instance-id and --region"):
        instance_identity(f"http://127.0.0.1:{free_port()}", timeout=0.5)


def test_the_agent_names_its_stream_after_the_instance(
    tmp_path: Path, moto_url: str, logs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_IMDS_ENDPOINT, moto_url)
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("NVRM: a line from an instance that knows its name\n")
    args = [
        "--cluster", "imds", "--endpoint-url", moto_url, "--create-log-group", "--boot-id", "b",
        "--kmsg", str(kmsg), "--state-dir", str(tmp_path / "state"), "--checks", "",
        "--metrics-port", "0", "--flush-interval", "0.2",
    ]  # fmt: skip
    process = agent_process(args)  # no --instance-id, no --region
    try:
        wait_for(
            lambda: (
                messages(logs, f"{MOTO_INSTANCE_ID}/kmsg", "/nodemedic/imds/nodes")
                == [shipped_message("NVRM: a line from an instance that knows its name", None)]
            ),
            "the line in the instance's stream",
        )
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0
