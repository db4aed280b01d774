"""Health checks register themselves: a new check is one module, and the command line,
``--checks`` and ``build_checks`` take its name, options and builder from the registry."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import agent.checks
from agent.checks import names, registry
from agent.checks.base import Result
from agent.cli import agent_config, configure_agent, run_agent
from agent.config import Config
from agent.deepcheck.tools import OPTIONS as DEEP_CHECK_OPTIONS
from agent.main import build_checks
from tests.support.paths import ROOT

WIDGETS = '''
"""A check of widgets, in a module of its own and nowhere else."""

from agent.argtypes import count
from agent.checks.base import Check, Result
from agent.checks.registry import Option, register

EXPECT_WIDGETS = Option("--expect-widgets", 0, "widgets expected (0: unchecked)", count)


class Widgets(Check):
    name = "widgets"

    def __init__(self, expected: int) -> None:
        self.expected = expected

    def run(self, ts: str) -> list[Result]:
        return [Result(self.name, "node", "ok", "Healthy", {"expected": self.expected}, ts)]


def build(config):
    return Widgets(EXPECT_WIDGETS.value(config.check_options))


register("widgets", build, EXPECT_WIDGETS)
'''


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks registered by a test are gone after it."""
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))


def agent_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nodemedic agent")
    configure_agent(parser)
    return parser


def test_every_check_module_registers_itself_in_order() -> None:
    """In a fresh interpreter, importing the package registers each module under it (a
    module it forgot to import would register nothing), in the order of ``--checks``."""
    modules = {
        f"agent.checks.{m.name}"
        for m in pkgutil.iter_modules(agent.checks.__path__)
        if m.name not in ("base", "registry")
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, agent.checks as c; "
            "print(json.dumps([[r.name, r.build.__module__] for r in c.registered()]))",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert {module for _, module in found} == modules
    assert [name for name, _ in found] == ["nvidia", "neuron", "efa", "neuron-monitor"]


def test_a_new_check_is_one_module(tmp_path: Path, scratch_registry: None) -> None:
    source = tmp_path / "widgets.py"
    source.write_text(WIDGETS)
    spec = importlib.util.spec_from_file_location("widgets", source)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    parser = agent_parser()
    assert "--expect-widgets EXPECT_WIDGETS\n" in parser.format_help()
    assert "widgets expected (0: unchecked)" in parser.format_help()
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    given = ["--cluster", "c", "--kmsg", str(kmsg), "--state-dir", str(tmp_path)]
    args = parser.parse_args([*given, "--expect-widgets", "3"])
    assert args.checks == "nvidia,neuron,efa,neuron-monitor,widgets"
    config = agent_config(parser.parse_args([*given, "--checks", "widgets"]), "i-1", "r", "b")
    assert [c.run("ts") for c in build_checks(config)] == [
        [Result("widgets", "node", "ok", "Healthy", {"expected": 0}, "ts")]
    ]
    *built_in, widgets = build_checks(agent_config(args, "i-1", "r", "b"))
    assert [c.name for c in built_in] == ["nvidia-smi", "neuron-sysfs", "efa", "neuron-monitor"]
    assert widgets.run("ts") == [Result("widgets", "node", "ok", "Healthy", {"expected": 3}, "ts")]


def test_unknown_checks_are_refused_with_the_registered_ones_named(
    tmp_path: Path, scratch_registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    registry.register("widgets", lambda config: pytest.fail("not built"))
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    args = agent_parser().parse_args(
        ["--cluster", "c", "--kmsg", str(kmsg), "--checks", "widgets,gadgets,efa"]
    )
    assert run_agent(args) == 2
    assert capsys.readouterr().err == (
        "nodemedic agent: unknown check(s) gadgets; "
        "known: nvidia, neuron, efa, neuron-monitor, widgets\n"
    )


def test_a_name_registers_once(scratch_registry: None) -> None:
    with pytest.raises(ValueError, match="'efa' is already registered"):
        registry.register("efa", lambda config: pytest.fail("not built"))


def test_the_config_is_every_flag_of_a_field_and_every_check_option(tmp_path: Path) -> None:
    flags = [
        "--cluster", "c", "--state-dir", str(tmp_path), "--sys-root", "/h",
        "--checks", "efa,nvidia", "--memory-batches", "0",
        "--nvidia-smi", "cat x", "--expect-gpus", "8",
    ]  # fmt: skip
    args = agent_parser().parse_args(flags)
    config = agent_config(args, "i-1", "r", "b")
    fields = {f.name for f in dataclasses.fields(Config)}
    assert fields - {"check_options"} <= set(vars(args)), "a field without a flag"
    assert dataclasses.asdict(config) == {
        **{name: getattr(args, name) for name in fields if hasattr(args, name)},
        "instance_id": "i-1",
        "region": "r",
        "boot_id": "b",
        "memory_batches": 1,
        "checks": ("efa", "nvidia"),
        "check_options": {
            "nvidia_smi": "cat x",
            "nvidia_smi_timeout": 60.0,
            "expect_gpus": 8,
            "expect_neuron_devices": None,
            "expect_efa_devices": 0,
            "neuron_monitor": "neuron-monitor -c {config}",
            "neuron_monitor_period": 5.0,
            **{option.dest: option.default for option in DEEP_CHECK_OPTIONS},
        },
    }
    assert names() == ("nvidia", "neuron", "efa", "neuron-monitor")
