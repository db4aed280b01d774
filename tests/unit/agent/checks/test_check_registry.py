"""Health checks are one explicit list: a new check is one module and one entry in
``agent.checks.all.CHECKS``, and the command line, ``--checks`` and ``build_checks`` take
its name, options and builder from there."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import agent.checks
from agent.checks import all as every_check
from agent.checks import names
from agent.checks.base import Result
from agent.checks.registry import Registration
from agent.cli import agent_config, configure_agent, run_agent
from agent.config import Config
from agent.deepcheck.tools import OPTIONS as DEEP_CHECK_OPTIONS
from agent.main import build_checks
from nodemedic.contracts.health import (
    EFA_CHECK,
    HEALTH_CHECKS,
    NEURON_MONITOR_CHECK,
    NEURON_SYSFS_CHECK,
    NVIDIA_SMI_CHECK,
)

WIDGETS = '''
"""A check of widgets, in a module of its own and nowhere else."""

from agent.argtypes import count
from agent.checks.base import Check, Result
from agent.checks.registry import Option, Registration

EXPECT_WIDGETS = Option("--expect-widgets", 0, "widgets expected (0: unchecked)", count)


class Widgets(Check):
    name = "widgets"

    def __init__(self, expected: int) -> None:
        self.expected = expected

    def run(self, ts: str) -> list[Result]:
        return [Result(self.name, "node", "ok", "Healthy", {"expected": self.expected}, ts)]


def build(config):
    return Widgets(EXPECT_WIDGETS.value(config.check_options))


REGISTRATION = Registration("widgets", "widgets", build, (EXPECT_WIDGETS,))
'''
BUILT_IN = every_check.CHECKS


def listed(monkeypatch: pytest.MonkeyPatch, *more: Registration) -> None:
    """The agent's checks for this test: the built-in ones, then ``more``."""
    monkeypatch.setattr(every_check, "CHECKS", (*BUILT_IN, *more))


def agent_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nodemedic agent")
    configure_agent(parser)
    return parser


def test_every_check_module_is_listed_in_order() -> None:
    """A check module missing from ``CHECKS`` would never run: each one under the package
    has its ``REGISTRATION`` in the list, which holds nothing else, in ``--checks``' order."""
    modules = [
        importlib.import_module(f"agent.checks.{m.name}")
        for m in pkgutil.iter_modules(agent.checks.__path__)
        if m.name not in ("all", "base", "registry")
    ]
    assert sorted(m.REGISTRATION.name for m in modules) == sorted(c.name for c in BUILT_IN)
    assert all(m.REGISTRATION in BUILT_IN for m in modules)
    assert [check.name for check in BUILT_IN] == ["nvidia", "neuron", "efa", "neuron-monitor"]


def test_each_check_names_the_lines_it_writes(tmp_path: Path) -> None:
    """Both names side by side: what ``--checks`` takes, and the contract's line name that
    the check it builds writes."""
    assert [(c.name, c.line) for c in BUILT_IN] == [
        ("nvidia", NVIDIA_SMI_CHECK),
        ("neuron", NEURON_SYSFS_CHECK),
        ("efa", EFA_CHECK),
        ("neuron-monitor", NEURON_MONITOR_CHECK),
    ]
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    given = ["--cluster", "c", "--kmsg", str(kmsg), "--state-dir", str(tmp_path)]
    config = agent_config(agent_parser().parse_args(given), "i-1", "r", "b")
    assert [check.name for check in build_checks(config)] == [c.line for c in BUILT_IN]


def test_a_new_check_is_one_module_and_one_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "widgets.py"
    source.write_text(WIDGETS)
    spec = importlib.util.spec_from_file_location("widgets", source)
    assert spec is not None and spec.loader is not None
    widgets_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(widgets_module)
    assert "--expect-widgets" not in agent_parser().format_help(), "importing it added it"
    listed(monkeypatch, widgets_module.REGISTRATION)
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
    assert tuple(c.name for c in built_in) == HEALTH_CHECKS
    assert widgets.run("ts") == [Result("widgets", "node", "ok", "Healthy", {"expected": 3}, "ts")]


def test_unknown_checks_are_refused_with_the_listed_ones_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    listed(monkeypatch, Registration("widgets", "widgets", lambda config: pytest.fail("built")))
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


def test_each_name_is_listed_once() -> None:
    for found in ([c.name for c in BUILT_IN], [c.line for c in BUILT_IN]):
        assert len(set(found)) == len(found), found


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
            "neuron_monitor_metrics": "",
            **{option.dest: option.default for option in DEEP_CHECK_OPTIONS},
        },
    }
    assert names() == ("nvidia", "neuron", "efa", "neuron-monitor")
