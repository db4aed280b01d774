"""What a simulated node's agent finds with the default image (``world.image``): the tools
the image lacks are the ones the deep check runs, and the deep check on a p5, a g6 and a
trn1 given those flags passes on what the node has and skips, with its reason, what the
image lacks."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agent.deepcheck import Node, run
from agent.deepcheck.tools import (
    ALL_REDUCE_PERF,
    DCGMI,
    FI_INFO,
    FI_PINGPONG,
    NCCOM_TEST,
    NEURON_LS,
)
from nodemedic.contracts.health import (
    DCGMI_DIAG_CHECK,
    GPU_COUNT_CHECK,
    NCCOM_TEST_CHECK,
    NEURON_COUNT_CHECK,
    NEURON_LS_CHECK,
)
from nodemedic.health.instance_types import devices_of
from nodemedic.health.result import Result
from tests.support.paths import ROOT
from world.image import agent_args

DOCKERFILE = ROOT / "deploy" / "image" / "Dockerfile"
TOOLS = {
    c.default.split()[0]
    for c in (DCGMI, ALL_REDUCE_PERF, NEURON_LS, NCCOM_TEST, FI_INFO, FI_PINGPONG)
}
"""The deep check's tools, by the names its default commands run."""


def test_neither_the_image_nor_the_world_has_the_tools_the_deep_check_runs() -> None:
    # The world's agents run the agent's own commands for them: they must find nothing.
    assert not [t for t in TOOLS if shutil.which(t)]
    text = DOCKERFILE.read_text(encoding="utf-8")
    # On its slim Python base (tests/unit/agent/deploy/test_image.py) only pip installs, and
    # only the agent's own requirements: no system package comes in.
    runs = re.findall(r"^RUN (.*?)(?<!\\)$", text, re.M | re.S)
    assert runs
    assert not [r for r in runs if re.search(r"apt-get|apt |yum|dnf|apk|microdnf", r)]
    assert not [t for t in TOOLS if t in " ".join(runs)]


def _deep_check(instance_type: str, node_dir: Path, *, runtime: bool = True) -> dict[str, Result]:
    given = agent_args(instance_type, node_dir, nvidia_runtime=runtime)
    flags = dict(flag.removeprefix("--").split("=", 1) for flag in given)
    assert flags["instance-type"] == instance_type
    devices = devices_of(instance_type)
    assert devices is not None
    node = Node(
        ts="2026-11-30T00:00:00Z",
        sys_root=Path(flags["sys-root"]),
        state_dir=node_dir / "state",
        boot_id="boot",
        instance_type=instance_type,
        expected_gpus=devices.gpus,
        expected_neuron_devices=devices.neuron_devices,
        expected_efa_devices=0,
        options={"nvidia_smi": flags["nvidia-smi"]},
    )
    (node_dir / "state").mkdir()
    return {r.check: r for r in run(node) if r.device == "node"}


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "g6.xlarge"])
def test_a_gpu_node_passes_on_the_runtime_nvidia_smi_and_skips_the_missing_tools(
    tmp_path: Path, instance_type: str
) -> None:
    found = _deep_check(instance_type, tmp_path)
    devices = devices_of(instance_type)
    assert devices is not None
    assert (found["deep-check"].status, found["deep-check"].reason) == ("ok", "Passed")
    assert found[GPU_COUNT_CHECK].figures["found"] == devices.gpus
    assert (found[DCGMI_DIAG_CHECK].status, found[DCGMI_DIAG_CHECK].reason) == (
        "skipped",
        "ToolMissing",
    )


def test_a_trn1_passes_on_the_neuron_sysfs_without_nvidia_smi_or_neuron_tools(
    tmp_path: Path,
) -> None:
    found = _deep_check("trn1.32xlarge", tmp_path)
    assert (found["deep-check"].status, found["deep-check"].reason) == ("ok", "Passed")
    assert found[NEURON_COUNT_CHECK].figures == {"expected": 16, "found": 16}
    assert found[GPU_COUNT_CHECK].reason == "NoNvidiaGpu"
    for check in (NEURON_LS_CHECK, NCCOM_TEST_CHECK):
        assert (found[check].status, found[check].reason) == ("skipped", "ToolMissing")


def test_a_gpu_node_without_the_nvidia_runtime_is_not_failed_for_the_missing_nvidia_smi(
    tmp_path: Path,
) -> None:
    """Nothing checked, which holds a rebooted node until ``deep_check_timeout`` gives it
    back unchecked; never ``Failed``, which would replace it."""
    found = _deep_check("g6.xlarge", tmp_path, runtime=False)
    assert (found["deep-check"].status, found["deep-check"].reason) == ("warn", "NothingChecked")
    assert (found[GPU_COUNT_CHECK].status, found[GPU_COUNT_CHECK].reason) == (
        "skipped",
        "ToolMissing",
    )
