"""``nodemedic triage`` reads SageMaker HyperPod's agent detections where they sit among a
node's lines (a Logs Insights export, the agent's stream saved to a file), with the rules
the classifier uses for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import main
from tests.support.paths import EVENTS
from tests.support.triage import fault_records, verdicts


def test_the_agents_detections_are_triaged_in_file_order_with_kernel_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reboot, terminate = (
        (EVENTS / "hyperpod" / name).read_text().strip()
        for name in ("agent-nvidia-error-reboot.json", "agent-nvidia-error-terminate.json")
    )
    log = tmp_path / "hyperpod.log"
    log.write_text(
        f"2024-08-21T11:35:35.532-07:00 {reboot}\n"
        "NVRM: Xid (PCI:0000:2b:00): 48, pid=1, DBE (double bit error) ECC error.\n"
        f"{terminate}\n"
    )
    assert main(["triage", "--format", "json", str(log)]) == 0
    out = capsys.readouterr().out
    found = [(r["line_no"], r["fault_id"], r["action"]) for r in fault_records(out)]
    assert found == [
        (1, "hyperpod-nvidia-error-reboot", "reboot"),
        (2, "nvidia-xid-48", "reboot"),
        (3, "hyperpod-nvidia-error-terminate", "replace"),
    ]
    [verdict] = verdicts(out)
    assert verdict["action"] == "replace" and verdict["faults"] == 3
