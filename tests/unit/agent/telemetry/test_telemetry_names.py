"""dcgm-exporter's names on ``/metrics`` switched off or prefixed, for nodes where
dcgm-exporter already exports them (the GPU Operator)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent.checks.nvidia import NvidiaSmi
from agent.cli import agent_config, configure_agent
from agent.config import Config
from agent.main import Agent
from agent.telemetry import DCGM_NAMES
from tests.support.paths import EVENTS
from tests.support.prometheus import Samples, read_exposition


def scraped(state_dir: Path, dcgm_names: bool = True, metric_prefix: str = "") -> Samples:
    """``/metrics`` of an agent whose GPU check read two L4s."""
    check = NvidiaSmi(["cat", str(EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml")])
    check.run("2026-11-22T18:30:00Z")
    config = Config(
        cluster="c",
        instance_id="i-0",
        region="us-east-1",
        boot_id="boot",
        state_dir=state_dir,
        endpoint_url="http://127.0.0.1:1",
        dcgm_names=dcgm_names,
        metric_prefix=metric_prefix,
    )
    return read_exposition(Agent(config, checks=[check]).metrics.render())


def dcgm(samples: Samples, prefix: str = "") -> set[str]:
    return {name for name in samples if name.startswith(prefix + DCGM_NAMES)}


def test_by_default_the_names_are_dcgm_exporters(tmp_path: Path) -> None:
    seen = scraped(tmp_path)
    assert len(dcgm(seen)) > 20
    assert any(name.startswith("nodemedic_agent_") for name in seen)


def test_off_leaves_every_dcgm_name_out_and_the_agents_own_in(tmp_path: Path) -> None:
    seen = scraped(tmp_path, dcgm_names=False)
    assert dcgm(seen) == set()
    assert not any(DCGM_NAMES in name for name in seen)
    assert any(name.startswith("nodemedic_agent_") for name in seen)


def test_a_prefix_goes_before_every_dcgm_name_and_no_other(tmp_path: Path) -> None:
    plain = scraped(tmp_path / "plain")
    seen = scraped(tmp_path / "prefixed", metric_prefix="nodemedic_")
    assert dcgm(seen) == set()
    assert dcgm(seen, "nodemedic_") == {f"nodemedic_{name}" for name in dcgm(plain)}
    assert {n for n in seen if DCGM_NAMES not in n} == {n for n in plain if DCGM_NAMES not in n}


def parsed(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_agent(parser)
    return parser.parse_args(["--cluster=c", *flags])


def test_the_flags_reach_the_agents_configuration() -> None:
    default = agent_config(parsed(), "i-0", "us-east-1", "boot")
    assert (default.dcgm_names, default.metric_prefix) == (True, "")
    config = agent_config(
        parsed("--dcgm-names=off", "--metric-prefix=nodemedic_"), "i-0", "us-east-1", "boot"
    )
    assert (config.dcgm_names, config.metric_prefix) == (False, "nodemedic_")


@pytest.mark.parametrize("flag", ["--dcgm-names=no", "--metric-prefix=9x", "--metric-prefix=a-b"])
def test_a_bad_switch_or_prefix_is_refused(flag: str) -> None:
    with pytest.raises(SystemExit):
        parsed(flag)
