"""The ``check`` field of a health result line: what the agent writes to CloudWatch Logs and
the catalog's health and deep-check rules match (``"<check> <status> <reason> <device>"``).

These are not the names ``--checks`` takes (``agent.checks``' ``nvidia``, ``neuron``, ...:
what people type, kept as they were); each check's registration names both.
"""

from __future__ import annotations

from typing import Final

# The health checks the agent runs on an interval (stream <instance-id>/health) -----------

NVIDIA_SMI_CHECK: Final = "nvidia-smi"
NEURON_SYSFS_CHECK: Final = "neuron-sysfs"
EFA_CHECK: Final = "efa"
NEURON_MONITOR_CHECK: Final = "neuron-monitor"

# The deep check (stream <instance-id>/deep-check) -----------------------------------------
# Its lines carry the checks above where it runs them (the GPUs' nvidia-smi report, the
# Neuron sysfs counters, what fi_info lists), its own sub-checks, and the verdict last.

GPU_COUNT_CHECK: Final = "gpu-count"
DCGMI_DIAG_CHECK: Final = "dcgmi-diag"
NCCL_ALL_REDUCE_CHECK: Final = "nccl-all-reduce"
NEURON_COUNT_CHECK: Final = "neuron-count"
NEURON_LS_CHECK: Final = "neuron-ls"
NCCOM_TEST_CHECK: Final = "nccom-test"
EFA_COUNT_CHECK: Final = "efa-count"
FI_INFO_CHECK: Final = "fi_info"
FI_PINGPONG_CHECK: Final = "fi_pingpong"
DEEP_CHECK_VERDICT: Final = "deep-check"
"""The verdict's check (device ``node``): ``Passed``, ``Failed`` or ``NothingChecked``. The
same word as the stream's source (``logs.DEEP_CHECK_SOURCE``); the subscription filter
selects verdicts by it."""

REASON_KEY: Final = "reason"
"""The key under which every result line, healthy or not, names its reason
(``nodemedic.health.result``): the word the subscription filter selects health lines by."""

HEALTH_CHECKS: Final = (NVIDIA_SMI_CHECK, NEURON_SYSFS_CHECK, EFA_CHECK, NEURON_MONITOR_CHECK)
"""The interval checks, in the order the agent runs them (``agent.checks.all``)."""
LINE_CHECKS: Final = (
    *HEALTH_CHECKS,
    GPU_COUNT_CHECK,
    DCGMI_DIAG_CHECK,
    NCCL_ALL_REDUCE_CHECK,
    NEURON_COUNT_CHECK,
    NEURON_LS_CHECK,
    NCCOM_TEST_CHECK,
    EFA_COUNT_CHECK,
    FI_INFO_CHECK,
    FI_PINGPONG_CHECK,
    DEEP_CHECK_VERDICT,
)
"""Every ``check`` a line the agent writes may carry."""
