"""The built-in rules of job output (``nodemedic.jobs.hardware``), the Neuron runtime's and
the fabric's: the lines their sources document are found in the forms launchers and library
versions print them, healthy and software lines are not, the stronger finding wins, and no
rule can ask for more than a deep check (a fabric rule, than a notification)."""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest
import yaml

from nodemedic.jobs import hardware
from nodemedic.jobs.hardware import CATALOGS, HardwareCatalogError, merged, parse, rules, strongest

NEURON, FABRIC = CATALOGS

PREFIXES = (
    "",
    "2024-Mar-04 11:02:17.0402 81234:81311 ERROR  TDRV:exec_consume_infer_status ",
    "[default3]:",
    "[1,5]<stdout>:",
    "rank 12: ",
)
"""The runtime's own stamp, torchrun's and Open MPI's rank prefixes, a script's own."""


def _document() -> dict[str, Any]:
    text = resources.files(hardware.__package__).joinpath(NEURON).read_text()
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
        # The fabric's, in each library's and version's spelling.
        # NCCL to 2.19 (S1): "with error %d", the peer or not.
        (
            "NCCL WARN NET/IB : Got completion from peer 10.0.3.4<33812> with error 12,"
            " opcode 1, len 0, vendor err 129",
            "nccl-ib-retry-exceeded",
        ),
        (
            "NCCL WARN NET/IB : Got completion with error 13, opcode 0, len 0",
            "nccl-ib-retry-exceeded",
        ),
        # NCCL 2.28.7 on: the status's enum name before its number.
        (
            "NCCL WARN NET/IB: Got completion from peer 10.0.3.4<33812> with"
            " status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=129"
            " req_type=Send hca mlx5_0",
            "nccl-ib-retry-exceeded",
        ),
        ("NCCL WARN NET/IB : Got async event : local catastrophic error", "nccl-ib-device-fatal"),
        ("NCCL WARN NET/IB : mlx5_4:1 Got async error event: port error", "nccl-ib-port-error"),
        (
            "NCCL WARN NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 1 marked as failed."
            " Initiating recovery? No (send comm=0x7f, outstandingRecovery=1)",
            "nccl-ib-device-failed",
        ),
        (
            "[1709377291.4] [node7:2021:0] ib_mlx5_log.c:171 UCX ERROR Receive-no-ready retry"
            " count exceeded on mlx5_2:1/RoCE (synd 0x16 vend 0x82 hw_synd 0/0)",
            "ucx-retry-exceeded",
        ),
        ("pml_ucx.c:865  Error: ucx send failed: Endpoint timeout", "ucx-retry-exceeded"),
        ("Completion with error: status=13(RNR retry counter exceeded)", "verbs-retry-exceeded"),
        (
            "error polling HP CQ with status RECEIVER NOT READY RETRY EXCEEDED ERROR status"
            " number 13 for wr_id 1 opcode 0  vendor error 136 qp_idx 0",
            "verbs-retry-exceeded",
        ),
        # libfabric 1.22's spelling of EFA's status 13.
        ("strerror: Unresponsive remote (detected locally) My EFA addr:", "efa-peer-unresponsive"),
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
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
        # A flushed request follows an earlier error; a remote access error is the program's
        # memory registration (S1's other statuses).
        "NCCL WARN NET/IB : Got completion from peer 10.0.3.4<1> with error 5, opcode 0, len 0",
        "NCCL WARN NET/IB: Got completion from peer 10.0.3.4<1> with status=10 opcode=3 len=0",
        "NCCL WARN NET/IB : Got completion from peer 10.0.3.4<1> with status=120 opcode=0",
        "NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async event: port active(9)",
        # EFA's status 15: aws-ofi-nccl points to the security groups, a configuration (S7).
        "prov_errno: 15, strerror: Unreachable remote - never received a response",
        "UCX ERROR Remote access error on mlx5_0:1/IB (synd 0x13 vend 0x88 hw_synd 0/0)",
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
    assert "replace" in by_id["neuron-rt-dma-abort"].advice
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
        parse(document, NEURON)


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


def test_no_fabric_rule_asks_for_more_than_a_notification() -> None:
    """A retry that ran out names a path: this node's NIC, the fabric or the peer."""
    fabric = hardware.load(FABRIC)
    assert fabric and {rule.action for rule in fabric} == {"notify"}


def test_two_families_may_not_share_a_rule_id() -> None:
    """The id names a Node's Event and its hour's deduplication."""
    neuron = hardware.load(NEURON)
    with pytest.raises(HardwareCatalogError, match="unique") as refused:
        merged([neuron, hardware.load(FABRIC), neuron[:1]])
    assert f"more than one rule has {[neuron[0].id]}" in str(refused.value)
