"""What an agent of the default image (deploy/image/Dockerfile) finds on a node, by the
node's instance type: the flags that make a simulated node's agent see only that.

The default image is the agent on a slim Python base: none of the deep check's tools
(dcgmi, nccl-tests' all_reduce_perf, neuron-ls, nccom-test, fi_info, fi_pingpong) is in
it, and this machine has none either, so the agent's own commands for them find nothing.
What the image does find comes from the node:

- on an NVIDIA node, ``nvidia-smi``, which the NVIDIA container runtime mounts into the pod
  (the chart's ``agent.nvidiaDriverCapabilities``: ``utility``): here the recorded report
  with the type's GPU count (``world.aws.gpus.node_report``);
- the host's sysfs, mounted at ``--sys-root``: here a folder per node, holding the Neuron
  driver's devices on a Neuron type (``neuron_sysfs``), empty on the others.

Everything else stays as the chart renders it, but for the world's stand-ins, which these
flags undo: the world's ``agent.extraArgs`` give every agent the fleet's ``nvidia-smi``
report and the nvidia check only (``world.agents.extra_args``).
"""

from __future__ import annotations

from pathlib import Path

from agent.checks import names as check_names
from agent.checks.neuron import COUNTERS, SYSFS_DIR
from agent.checks.nvidia import COMMAND as NVIDIA_SMI
from nodemedic.health.instance_types import devices_of
from world.aws.gpus import node_report

NEURON_CORES = 2
"""NeuronCores per Trainium device (trn1: 16 devices, 32 cores)."""


def neuron_sysfs(sys_root: Path, devices: int) -> None:
    """The Neuron driver's sysfs (``agent.checks.neuron``) of a healthy node: ``devices``
    devices, every uncorrectable counter at zero."""
    for index in range(devices):
        device = sys_root / SYSFS_DIR / f"neuron{index}"
        hardware = device / "stats" / "hardware"
        hardware.mkdir(parents=True, exist_ok=True)
        for name, _ in COUNTERS:
            if name != "nc_uncorrected":
                (hardware / name).write_text("0\n", encoding="ascii")
        for core in range(NEURON_CORES):
            status = device / f"neuron_core{core}" / "stats" / "status" / "hw_nc_ue_error"
            status.mkdir(parents=True, exist_ok=True)
            (status / "total").write_text("0\n", encoding="ascii")


def agent_args(instance_type: str, node_dir: Path, *, nvidia_runtime: bool = True) -> list[str]:
    """The flags after the chart's that give a simulated node of ``instance_type`` (its
    files under ``node_dir``) what the default image finds on a real one: its type, every
    check the agent has (the chart names none), nvidia-smi only where the type has GPUs and
    ``nvidia_runtime`` (False: a node whose container runtime is not NVIDIA's, which mounts
    no nvidia-smi), the host's sysfs with the type's Neuron devices."""
    devices = devices_of(instance_type)
    if devices is None:
        raise ValueError(f"{instance_type} is not in nodemedic.health.instance_types")
    sys_root = node_dir / "host-sys"
    sys_root.mkdir(parents=True, exist_ok=True)
    neuron_sysfs(sys_root, devices.neuron_devices)
    if devices.gpus and nvidia_runtime:
        report = node_report(devices.gpus, node_dir / f"nvidia-smi-{instance_type}.xml")
        nvidia_smi = f"cat {report}"
    else:
        nvidia_smi = NVIDIA_SMI.default
    return [
        # A real node's agent reads it from IMDS with its identity, which the world's
        # agents are given as flags (``world.agents.node_args``).
        f"--instance-type={instance_type}",
        f"--checks={','.join(check_names())}",
        f"--nvidia-smi={nvidia_smi}",
        f"--sys-root={sys_root}",
    ]
