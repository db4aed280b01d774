"""The built-in Neuron runtime rules of job output (``nodemedic.jobs.hardware``): the lines
AWS documents are found in the forms launchers print them, healthy and software lines are
not, the stronger finding wins, and no rule can ask for more than a deep check."""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest
import yaml

from nodemedic.jobs import hardware
from nodemedic.jobs.hardware import HardwareCatalogError, parse, rules, strongest

PREFIXES = (
    "",
    "2024-Mar-04 11:02:17.0402 81234:81311 ERROR  TDRV:exec_consume_infer_status ",
    "[default3]:",
    "[1,5]<stdout>:",
    "rank 12: ",
)
"""The runtime's own stamp, torchrun's and Open MPI's rank prefixes, a script's own."""


def _document() -> dict[str, Any]:
    text = resources.files(hardware.__package__).joinpath(hardware.CATALOG).read_text()
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_documented_line_is_found_whatever_the_launcher_prints_before_it(
    prefix: str,
) -> None:
    for rule in rules():
        found = hardware.matched(prefix + rule.example + "  ")
        assert found is not None and found.id == rule.id, (prefix, rule.id)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # The other engine, device and core numbers than the documented example's.
        ("[MLA 11][NC 3] DMA RX engine 15 is in an abort state", "neuron-rt-dma-abort"),
        (
            "(FATAL-RT-UNDEFINED-STATE) [ND 7][NC 1] Uncorrectable memory error is detected,"
            " metadata: 0x2a. Please terminate or stop/start this instance to prevent future"
            " impact from the hardware error.",
            "neuron-rt-sram-uncorrectable",
        ),
        (
            "(FATAL-RT-UNDEFINED-STATE) execution timeout (60000 ms) on Neuron Device 14 NC 7,"
            " model /tmp/graph.neff, waiting for execution completion notification",
            "neuron-rt-compute-hang",
        ),
        (
            "torch_neuronx RuntimeError: Failed to execute the model status=1201"
            " message=Hardware Error",
            "neuron-rt-hw-error-status",
        ),
        ("nrt_execute returned NRT_EXEC_HW_ERR_NC_UE", "neuron-rt-hw-error-status"),
        # The device and core before the text, the model instead of the device (S5's forms).
        (
            "(FATAL-RT-UNDEFINED-STATE) [ND 3][NC 1] execution timeout (30000 ms) on model"
            " /tmp/m.neff, waiting for execution completion notification",
            "neuron-rt-compute-hang",
        ),
        (
            "(FATAL-RT-UNDEFINED-STATE) [ND 0][NC 4] missing collectives status on model"
            " /tmp/m.neff. Suspected hang in waiting for barrier",
            "neuron-rt-collectives-hang",
        ),
        (
            "(FATAL-RT-UNDEFINED-STATE) [ND 0][NC 4] Suspected hang between the end of"
            " collectives operation 7 and the start of collectives operation 8",
            "neuron-rt-collectives-hang",
        ),
        (
            "(FATAL-RT-UNDEFINED-STATE) [ND 2] Uncorrectable HBM memory error is detected."
            " Execution results may be invalid. Please terminate this instance to prevent"
            " future impact from the hardware error.",
            "neuron-rt-hbm-uncorrectable",
        ),
    ],
)
def test_the_forms_beyond_the_documented_example_are_found(line: str, rule: str) -> None:
    found = hardware.matched(line)
    assert found is not None and found.id == rule


@pytest.mark.parametrize(
    "line",
    [
        "epoch 3 step 200 training_loss_step 1.93 samples_per_second 412.0",
        # A software error code, not a hardware one (issue aws-neuron-sdk#351's form).
        'Execute failed: nrt_execute: status=1004, error message="Execution was completed'
        ' with other errors".',
        "RuntimeError: Failed to execute the model status=5 message=Timeout Exceeded",
        "Timeout waiting for RX (waited 120 sec) - retrying",
        "ERROR  NRT:nrt_allocate_neuron_cores NeuronCore(s) not available - Requested:nc1-nc1",
        "status=12010 rows written",
        "DMA TX engine 0 is healthy",
    ],
)
def test_healthy_and_software_lines_are_no_evidence(line: str) -> None:
    assert hardware.matched(line) is None


def test_the_strongest_finding_of_a_pods_lines_is_kept_with_its_first_line() -> None:
    notify = "(FATAL-RT-UNDEFINED-STATE) missing collectives status on Neuron Device 0 NC 0"
    abort = "[MLA 0][NC 0] DMA TX engine 0 is in an abort state"
    found = strongest([(1.0, "step 1"), (2.0, notify), (3.0, abort), (4.0, abort + " again")])
    assert found is not None
    assert (found.rule.id, found.rule.action, found.line, found.at) == (
        "neuron-rt-dma-abort",
        "deep-check",
        abort,
        3.0,
    )
    only = strongest([(2.0, notify)])
    assert only is not None and only.rule.action == "notify"
    assert strongest([(1.0, "step 1")]) is None


def test_aws_replace_guidance_asks_for_a_deep_check_never_more() -> None:
    by_id = {rule.id: rule for rule in rules()}
    assert "replace" in by_id["neuron-rt-dma-abort"].aws
    assert by_id["neuron-rt-dma-abort"].action == "deep-check"
    assert by_id["neuron-rt-collectives-hang"].action == "notify"
    assert {rule.action for rule in rules()} <= {"notify", "deep-check"}


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda r: r.update(action="replace"), "action must be one of"),
        (lambda r: r.update(example="step 1"), "misses its example"),
        (lambda r: r.update(pattern="(a)\\1"), "neuron-rt-sram-uncorrectable"),
        (lambda r: r.pop("source"), "exactly"),
    ],
)
def test_a_rule_asking_for_more_or_not_matching_its_example_is_refused(
    change: Any, complaint: str
) -> None:
    document = copy.deepcopy(_document())
    change(document["rules"][0])
    with pytest.raises(HardwareCatalogError, match=complaint):
        parse(document)


def test_a_long_deliverys_finding_names_its_own_line_and_time() -> None:
    """The lines are searched joined: the finding must still be the line that matched, even
    after lines that carry newlines of their own."""
    lines = [(float(i), f"step {i} loss 1.{i}") for i in range(1000)]
    lines[3] = (3.0, "Traceback (most recent call last):\n  File train.py\nValueError")
    lines[10] = (10.0, "(FATAL-RT-UNDEFINED-STATE) missing collectives status on model m.neff")
    lines[500] = (500.0, "[MLA 1][NC 0] DMA RX engine 3 is in an abort state")
    found = strongest(lines)
    assert found is not None
    assert (found.at, found.line, found.rule.id) == (500.0, lines[500][1], "neuron-rt-dma-abort")
