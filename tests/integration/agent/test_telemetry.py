"""A running agent's /metrics with accelerator telemetry: recorded real outputs of
nvidia-smi (tests/events/nvidia-smi) and neuron-monitor (tests/events/neuron-monitor) read
through the tools' own command lines, scraped over HTTP beside the agent's own metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.agent.test_agent import scrape
from tests.support.agent import config, free_port, wait_for
from tests.support.paths import EVENTS

L4X2 = EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
NEURON = EVENTS / "neuron-monitor" / "inf1-xlarge-one-runtime.jsonl"


def test_metrics_show_neuron_and_gpu_telemetry_from_recorded_outputs(
    tmp_path: Path, moto_url: str, instance_id: str, run_agent: Any
) -> None:
    port = free_port()
    cfg = config(
        tmp_path,
        moto_url,
        instance_id,
        metrics_port=port,
        checks=("nvidia", "neuron-monitor"),
        check_options={"nvidia_smi": f"cat {L4X2}", "neuron_monitor": f"cat {NEURON}"},
    )
    running = run_agent(cfg)

    def families() -> set[str]:
        return {name.split("{")[0] for name in scrape(port)}

    wait_for(lambda: "neuroncore_utilization_ratio" in families(), 15, "the Neuron report")
    seen = scrape(port)
    by_name: dict[str, list[float]] = {}
    for name, value in seen.items():
        by_name.setdefault(name.split("{")[0], []).append(value)
    assert sorted(by_name["DCGM_FI_DEV_GPU_TEMP"]) == [40, 45]
    assert len(by_name["DCGM_FI_DEV_POWER_USAGE"]) == 2
    assert max(by_name["neuroncore_utilization_ratio"]) > 0.029
    assert by_name["execution_status_total"][0] == 50
    assert len(by_name["hardware_ecc_events_total"]) == 4
    assert by_name["system_memory_total_bytes"] == [8033386496]
    # The agent's own metrics are still there, and the checks' status with them.
    assert seen['nodemedic_agent_check_status{check="nvidia-smi",status="ok"}'] == 1
    assert "nodemedic_agent_lines_read_total" in seen
    # The agent wrote neuron-monitor's config where the command could read it.
    assert (cfg.state_dir / "neuron-monitor.json").is_file()
    running.close()
