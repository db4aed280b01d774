"""The agent's deep health check against CloudWatch Logs (moto) with recorded tool outputs:
``nodemedic agent --deep-check`` runs once, ships every sub-check and the verdict on
``<instance-id>/deep-check`` and exits with the verdict; an agent started with
``--deep-check-at-start`` ships the same while it follows the kernel log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from nodemedic.contracts.health import DEEP_CHECK_VERDICT, NCCL_ALL_REDUCE_CHECK
from nodemedic.contracts.logs import deep_check_stream
from tests.support.agent import AWS_ENV, CLUSTER, REGION, config, messages, wait_for
from tests.support.paths import EVENTS, ROOT

L4_X2 = EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
MISSING = "nodemedic-no-such-tool"


def tools(all_reduce: Path) -> dict[str, str]:
    return {
        "nvidia_smi": f"cat {L4_X2}",
        "all_reduce_perf": f"cat {all_reduce}",
        "dcgmi": f"cat {EVENTS / 'dcgmi' / 'r2-healthy.json'}",
        "neuron_ls": MISSING,
        "nccom_test": MISSING,
        "fi_info": MISSING,
        "fi_pingpong": MISSING,
    }


def test_deep_check_once_ships_every_result_and_exits_with_the_verdict(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    (tmp_path / "kmsg").touch()
    (tmp_path / "sys").mkdir()
    flags = [
        f"--{dest.replace('_', '-')}={command}"
        for dest, command in tools(EVENTS / "nccl-tests" / "p2p-disabled-all-reduce.txt").items()
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "--deep-check",
            "--no-sign",
            "--cluster",
            CLUSTER,
            "--instance-id",
            instance_id,
            "--region",
            REGION,
            "--instance-type",
            "p5.48xlarge",
            "--expect-gpus",
            "2",
            "--endpoint-url",
            moto_url,
            "--create-log-group",
            "--boot-id",
            "b-1",
            "--kmsg",
            str(tmp_path / "kmsg"),
            "--state-dir",
            str(tmp_path / "state"),
            "--sys-root",
            str(tmp_path / "sys"),
            "--metrics-port",
            "0",
            *flags,
        ],
        cwd=ROOT,
        env={**os.environ, **AWS_ENV, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr.decode()
    printed = [json.loads(line) for line in done.stdout.decode().splitlines()]
    shipped = [json.loads(m) for m in messages(logs, deep_check_stream(instance_id))]
    assert shipped == printed
    verdict = shipped[-1]
    assert (verdict["check"], verdict["status"], verdict["reason"]) == (
        DEEP_CHECK_VERDICT,
        "fail",
        "Failed",
    )
    assert verdict["figures"]["failed_checks"] == NCCL_ALL_REDUCE_CHECK
    nccl = next(r for r in shipped if r["check"] == NCCL_ALL_REDUCE_CHECK)
    assert nccl["figures"] == {"busbw_gbps": 5.19883, "expected_gbps": 350.0}
    skipped = [r for r in shipped if r["status"] == "skipped"]
    assert skipped and all(r["reason"] and r["figures"]["detail"] for r in skipped)


def test_an_agent_started_with_deep_check_at_start_ships_a_pass(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, run_agent: Any
) -> None:
    (tmp_path / "sys").mkdir()
    options = {**tools(EVENTS / "nccl-tests" / "h100x8-all-reduce.txt"), "expect_gpus": 2}
    cfg = config(
        tmp_path,
        moto_url,
        instance_id,
        instance_type="p5.48xlarge",
        sys_root=tmp_path / "sys",
        deep_check_at_start=True,
        check_options=options,
    )
    running = run_agent(cfg)
    stream = deep_check_stream(instance_id)

    def verdict() -> dict[str, Any] | None:
        found = [json.loads(m) for m in messages(logs, stream)]
        return found[-1] if found and found[-1]["check"] == DEEP_CHECK_VERDICT else None

    wait_for(lambda: verdict() is not None, "the deep check's verdict")
    assert (verdict() or {})["reason"] == "Passed"
    wait_for((cfg.state_dir / "deep-check-boot").exists, "the boot marked checked")
    running.close()
