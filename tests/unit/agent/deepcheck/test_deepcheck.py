"""The deep health check's sub-checks on recorded tool outputs (tests/events/): each one
passes, fails or is skipped with its reason, and the verdict line says which."""

from __future__ import annotations

import shlex
from pathlib import Path

from agent.deepcheck import Node, run
from agent.deepcheck.efa import deep_check as efa_check
from agent.deepcheck.neuron import deep_check as neuron_check
from agent.deepcheck.nvidia import deep_check as nvidia_check
from nodemedic.contracts.health import (
    DCGMI_DIAG_CHECK,
    DEEP_CHECK_VERDICT,
    EFA_CHECK,
    EFA_COUNT_CHECK,
    FI_PINGPONG_CHECK,
    GPU_COUNT_CHECK,
    NCCL_ALL_REDUCE_CHECK,
    NCCOM_TEST_CHECK,
    NEURON_COUNT_CHECK,
    NEURON_SYSFS_CHECK,
    NVIDIA_SMI_CHECK,
)
from nodemedic.health.result import Result
from tests.support.paths import EVENTS
from tests.unit.agent.checks.test_check_sysfs import neuron_tree

TS = "2026-11-22T18:30:00Z"
MISSING = "nodemedic-no-such-tool"
L4_X2 = EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
H100_X8 = EVENTS / "nccl-tests" / "h100x8-all-reduce.txt"
P2P_OFF = EVENTS / "nccl-tests" / "p2p-disabled-all-reduce.txt"


def cat(path: Path) -> str:
    return f"cat {shlex.quote(str(path))}"


def node(tmp_path: Path, gpus: int = 0, neuron: int = 0, efa: int = 0, **tools: object) -> Node:
    """A node with nothing installed unless ``tools`` (option dest -> command) says so."""
    options: dict[str, object] = {
        "nvidia_smi": MISSING,
        "dcgmi": MISSING,
        "all_reduce_perf": MISSING,
        "neuron_ls": MISSING,
        "nccom_test": MISSING,
        "fi_info": MISSING,
        "fi_pingpong": MISSING,
        **tools,
    }
    (tmp_path / "sys").mkdir(exist_ok=True)
    return Node(
        TS,
        tmp_path / "sys",
        tmp_path,
        "boot-1",
        str(tools.get("type", "")),
        gpus,
        neuron,
        efa,
        options,
    )


def by_check(results: list[Result]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for r in results:
        found.setdefault(r.check, []).append((r.status, r.reason))
    return found


def figures(results: list[Result], check: str) -> dict[str, object]:
    return dict(next(r for r in results if r.check == check).figures)


def test_a_healthy_gpu_node_passes_with_its_figures(tmp_path: Path) -> None:
    results = run(
        node(
            tmp_path,
            gpus=2,
            type="p5.48xlarge",
            nvidia_smi=cat(L4_X2),
            dcgmi=cat(EVENTS / "dcgmi" / "r2-healthy.json"),
            all_reduce_perf=cat(H100_X8),
        )
    )
    checks = by_check(results)
    assert checks[GPU_COUNT_CHECK] == [("ok", "Healthy")]
    assert checks[NVIDIA_SMI_CHECK] == [("ok", "Healthy"), ("ok", "Healthy")]
    assert checks[DCGMI_DIAG_CHECK] == [("ok", "Healthy")]
    assert checks[NCCL_ALL_REDUCE_CHECK] == [("ok", "Healthy")]
    assert figures(results, NCCL_ALL_REDUCE_CHECK) == {
        "busbw_gbps": 448.212,
        "expected_gbps": 350.0,
    }
    assert figures(results, GPU_COUNT_CHECK) == {"expected": 2, "found": 2}
    assert (results[-1].check, results[-1].status, results[-1].reason) == (
        DEEP_CHECK_VERDICT,
        "ok",
        "Passed",
    )


def test_bandwidth_below_the_instance_types_threshold_fails_the_node(tmp_path: Path) -> None:
    results = run(
        node(
            tmp_path,
            gpus=2,
            type="p5.48xlarge",
            nvidia_smi=cat(L4_X2),
            all_reduce_perf=cat(P2P_OFF),
        )
    )
    assert by_check(results)[NCCL_ALL_REDUCE_CHECK] == [("fail", "BandwidthLow")]
    assert figures(results, NCCL_ALL_REDUCE_CHECK) == {
        "busbw_gbps": 5.19883,
        "expected_gbps": 350.0,
    }
    assert (results[-1].status, results[-1].reason) == ("fail", "Failed")
    assert results[-1].figures["failed_checks"] == NCCL_ALL_REDUCE_CHECK


def test_bandwidth_without_a_threshold_is_measured_and_skipped_not_passed(tmp_path: Path) -> None:
    results = run(
        node(
            tmp_path,
            gpus=2,
            type="g6.12xlarge",
            nvidia_smi=cat(L4_X2),
            all_reduce_perf=cat(P2P_OFF),
        )
    )
    assert by_check(results)[NCCL_ALL_REDUCE_CHECK] == [("skipped", "NoThreshold")]
    assert figures(results, NCCL_ALL_REDUCE_CHECK) == {"busbw_gbps": 5.19883}


def test_missing_gpus_and_ecc_errors_fail(tmp_path: Path) -> None:
    missing = nvidia_check(node(tmp_path, gpus=8, nvidia_smi=cat(L4_X2)))
    assert by_check(missing)[GPU_COUNT_CHECK] == [("fail", "GpuMissing")]
    ecc = nvidia_check(
        node(
            tmp_path,
            gpus=1,
            nvidia_smi=cat(EVENTS / "nvidia-smi" / "tesla-v100-dbe-retirement-pending.xml"),
        )
    )
    assert ("fail", "EccUncorrectable") in by_check(ecc)[NVIDIA_SMI_CHECK]


def test_a_failed_dcgm_diagnostic_fails_its_gpu(tmp_path: Path) -> None:
    results = nvidia_check(
        node(
            tmp_path,
            gpus=2,
            nvidia_smi=cat(L4_X2),
            dcgmi=cat(EVENTS / "dcgmi" / "r2-gpu-memory-fail-excerpt.txt"),
        )
    )
    diag = [r for r in results if r.check == DCGMI_DIAG_CHECK]
    assert [(r.device, r.status, r.reason) for r in diag][:1] == [("gpu0", "fail", "DiagFail")]


def test_a_tool_that_fails_or_prints_nothing_readable_is_a_failure(tmp_path: Path) -> None:
    results = nvidia_check(node(tmp_path, gpus=2, nvidia_smi=cat(L4_X2), all_reduce_perf="false"))
    assert by_check(results)[NCCL_ALL_REDUCE_CHECK] == [("fail", "NoBandwidth")]
    broken = nvidia_check(node(tmp_path, gpus=2, nvidia_smi="false"))
    assert by_check(broken)[GPU_COUNT_CHECK] == [("fail", "ToolFailed")]


def test_skipped_sub_checks_say_why(tmp_path: Path) -> None:
    cpu_only = run(node(tmp_path))
    assert {r.status for r in cpu_only[:-1]} == {"skipped"}
    assert all(r.reason and r.figures["detail"] for r in cpu_only[:-1])
    assert by_check(cpu_only)[GPU_COUNT_CHECK] == [("skipped", "NoNvidiaGpu")]
    assert (cpu_only[-1].status, cpu_only[-1].reason) == ("warn", "NothingChecked")
    no_dcgm = nvidia_check(node(tmp_path, gpus=2, nvidia_smi=cat(L4_X2)))
    assert by_check(no_dcgm)[DCGMI_DIAG_CHECK] == [("skipped", "ToolMissing")]
    assert f"{MISSING} not found" in str(figures(no_dcgm, DCGMI_DIAG_CHECK)["detail"])


def test_a_gpu_type_without_nvidia_smi_is_skipped_never_failed(tmp_path: Path) -> None:
    """An image or runtime without nvidia-smi says so; it must not fail the verdict, since a
    failed deep check replaces the node."""
    results = run(node(tmp_path, gpus=8))
    assert by_check(results)[GPU_COUNT_CHECK] == [("skipped", "ToolMissing")]
    assert f"{MISSING} not found" in str(figures(results, GPU_COUNT_CHECK)["detail"])
    assert (results[-1].status, results[-1].reason) == ("warn", "NothingChecked")


def test_neuron_count_counters_neuron_ls_and_nccom_test(tmp_path: Path) -> None:
    base = neuron_tree(tmp_path / "sys", 2)
    (base / "neuron1/stats/hardware/mem_ecc_uncorrected").write_text("3\n")
    results = neuron_check(
        node(
            tmp_path,
            neuron=16,
            neuron_ls=cat(EVENTS / "neuron-ls" / "trn2-json-two-of-sixteen.json"),
            nccom_test=cat(EVENTS / "nccom-test" / "allr-two-ranks.txt"),
        )
    )
    checks = by_check(results)
    assert checks[NEURON_COUNT_CHECK] == [("fail", "DeviceMissing")]
    assert ("fail", "HbmUncorrectable") in checks[NEURON_SYSFS_CHECK]
    assert ("fail", "DeviceMissing") in checks[NEURON_SYSFS_CHECK]  # neuron-ls lists 2 of 16
    assert checks[NCCOM_TEST_CHECK] == [("skipped", "NoThreshold")]
    assert figures(results, NCCOM_TEST_CHECK) == {"busbw_gbps": 40.6901}


def efa_tree(sys_root: Path, devices: int) -> None:
    for n in range(devices):
        (sys_root / "class" / "infiniband" / f"rdmap{n}s27" / "ports" / "1" / "hw_counters").mkdir(
            parents=True
        )


def pingpong(tmp_path: Path, client_output: Path, exit_code: int = 0) -> str:
    """A stand-in fi_pingpong: waits as the server, prints ``client_output`` as the client."""
    script = tmp_path / "fi_pingpong"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = 127.0.0.1 ]; then cat {shlex.quote(str(client_output))}\n'
        f"  exit {exit_code}\nfi\n"
        "exec sleep 30\n"
    )
    script.chmod(0o755)
    return str(script)


def test_efa_count_fi_info_and_loopback_pingpong(tmp_path: Path) -> None:
    efa_tree(tmp_path / "sys", 4)
    results = efa_check(
        node(
            tmp_path,
            efa=4,
            fi_info=cat(EVENTS / "fi_info" / "p4d-24xlarge-four-efa.txt"),
            fi_pingpong=pingpong(tmp_path, EVENTS / "fi_pingpong" / "efa-loopback.txt"),
        )
    )
    checks = by_check(results)
    assert checks[EFA_COUNT_CHECK] == [("ok", "Healthy")]
    assert checks[EFA_CHECK] == [("ok", "Healthy")] * 4
    assert checks[FI_PINGPONG_CHECK] == [("ok", "Healthy")]
    assert figures(results, FI_PINGPONG_CHECK) == {"size": "1m", "mb_per_s": 2614.25}


def test_efa_that_libfabric_cannot_open_fails(tmp_path: Path) -> None:
    efa_tree(tmp_path / "sys", 1)
    no_device = EVENTS / "fi_info" / "no-efa-device.txt"
    results = efa_check(
        node(tmp_path, efa=2, fi_info=cat(no_device), fi_pingpong=pingpong(tmp_path, no_device, 1))
    )
    checks = by_check(results)
    assert checks[EFA_COUNT_CHECK] == [("fail", "DeviceMissing")]
    assert checks[EFA_CHECK] == [("fail", "DeviceMissing")]
    assert checks[FI_PINGPONG_CHECK] == [("fail", "PingpongFailed")]
