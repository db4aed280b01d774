"""A running agent's /metrics with accelerator telemetry: recorded real outputs of
nvidia-smi (tests/events/nvidia-smi) and neuron-monitor (tests/events/neuron-monitor) read
through the tools' own command lines, scraped over HTTP beside the agent's own metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.config import Config
from nodemedic.catalog import load_catalog
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.contracts.logs import health_stream, telemetry_stream
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from tests.integration.agent.test_agent import scrape
from tests.support.agent import GROUP, config, free_port, messages, wait_for
from tests.support.paths import EVENTS

L4X2 = EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"
NEURON = EVENTS / "neuron-monitor" / "inf1-xlarge-one-runtime.jsonl"


def recorded(tmp_path: Path, moto_url: str, instance_id: str, **overrides: Any) -> Config:
    """An agent whose nvidia-smi and neuron-monitor print the recorded outputs."""
    return config(
        tmp_path,
        moto_url,
        instance_id,
        checks=("nvidia", "neuron-monitor"),
        check_options={"nvidia_smi": f"cat {L4X2}", "neuron_monitor": f"cat {NEURON}"},
        **overrides,
    )


def test_metrics_show_neuron_and_gpu_telemetry_from_recorded_outputs(
    tmp_path: Path, moto_url: str, instance_id: str, run_agent: Any
) -> None:
    port = free_port()
    cfg = recorded(tmp_path, moto_url, instance_id, metrics_port=port)
    running = run_agent(cfg)

    def families() -> set[str]:
        return {name.split("{")[0] for name in scrape(port)}

    wait_for(lambda: "neuroncore_utilization_ratio" in families(), "the Neuron report")
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
    assert seen[f'nodemedic_agent_check_status{{check="{NVIDIA_SMI_CHECK}",status="ok"}}'] == 1
    assert "nodemedic_agent_lines_read_total" in seen
    # The agent wrote neuron-monitor's config where the command could read it.
    assert (cfg.state_dir / "neuron-monitor.json").is_file()
    running.close()


def test_telemetry_emf_ships_metrics_the_classifier_never_sees(
    tmp_path: Path, moto_url: str, instance_id: str, run_agent: Any, logs: Any
) -> None:
    cfg = recorded(tmp_path, moto_url, instance_id, check_interval=0.3, telemetry_emf=True)
    running = run_agent(cfg)
    stream = telemetry_stream(instance_id)

    def devices() -> set[str]:
        found = set()
        for line in messages(logs, stream):
            [dimensions] = json.loads(line)["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
            found.add(dimensions[-1])
        return found

    wait_for(lambda: devices() == {"GPU", "NeuronCore", "NeuronDevice"}, "EMF of each kind")
    running.close()
    shipped = messages(logs, stream)
    patterns = subscription_filter_patterns(load_catalog())
    assert [line for line in shipped if selected(patterns, line)] == []
    gpu = next(json.loads(line) for line in shipped if '"GPU":"0"' in line)
    assert (gpu["ClusterName"], gpu["InstanceId"], gpu["GPUTemperature"]) == (
        cfg.cluster,
        instance_id,
        45,
    )


def test_without_the_flag_no_telemetry_ships(
    tmp_path: Path, moto_url: str, instance_id: str, run_agent: Any, logs: Any
) -> None:
    cfg = recorded(tmp_path, moto_url, instance_id, check_interval=0.3, healthy_every=0)
    running = run_agent(cfg)
    # Each run ships its health lines before its telemetry would: after the third run's
    # lines arrive, the first two runs' telemetry would have.
    first = len(wait_messages(logs, health_stream(instance_id)))
    wait_for(lambda: len(messages(logs, health_stream(instance_id))) >= 3 * first, "3 runs")
    running.close()
    assert messages(logs, telemetry_stream(instance_id)) == []


def wait_messages(logs: Any, stream: str) -> list[str]:
    wait_for(lambda: bool(messages(logs, stream)), f"lines on {stream}")
    return messages(logs, stream)


def test_a_healthy_nodes_results_ship_once_while_its_checks_keep_running(
    tmp_path: Path, moto_url: str, instance_id: str, run_agent: Any, logs: Any
) -> None:
    """Unchanged healthy results ship once per ``healthy_every`` (15 min by default), not
    every run: the telemetry, which ships each run, shows the runs go on. (neuron-monitor's
    report streams in, so its result may first ship from the second run.)"""
    cfg = recorded(tmp_path, moto_url, instance_id, check_interval=0.3, telemetry_emf=True)
    running = run_agent(cfg)
    wait_messages(logs, health_stream(instance_id))

    def runs() -> int:
        """Check runs whose telemetry shipped: each run's lines carry its own time."""
        events = logs.get_log_events(
            logGroupName=GROUP, logStreamName=telemetry_stream(instance_id), startFromHead=True
        )["events"]
        return len({e["timestamp"] for e in events})

    wait_for(lambda: runs() >= 4, "three runs more")
    running.close()
    shipped = [json.loads(line) for line in messages(logs, health_stream(instance_id))]
    keys = [(r["check"], r["device"], r["reason"]) for r in shipped]
    assert len(keys) == len(set(keys)) >= 2, keys
