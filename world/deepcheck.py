"""What the local world's machines find when their agent runs the deep check at start
(``--deep-check-at-start``): its NCCL all-reduce, through the agent's own ``--all-reduce-perf``
seam, prints a recorded run instead of loading GPUs that are not there.

- ``pass``: the run of 8 H100s (448 GB/s) after ``CHECK_SECONDS``, held to p5.48xlarge's
  minimum (``--min-busbw``; the agents have no IMDS to name their type);
- ``fail``: the run of a node whose GPU links are down (5.2 GB/s): ``BandwidthLow``, the
  verdict ``Failed``;
- ``hang``: the test never returns (a hung collective), so no verdict ever ships.

The other sub-checks run as in every agent of the world (nvidia-smi reads the recorded
report; DCGM, Neuron and EFA tools are absent and reported skipped).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from nodemedic.contracts.health import NCCL_ALL_REDUCE_CHECK
from nodemedic.health.bandwidth import minimum_for

DATA = Path(__file__).with_name("data")
HEALTHY_ALL_REDUCE = DATA / "h100x8-all-reduce.txt"
DEGRADED_ALL_REDUCE = DATA / "p2p-disabled-all-reduce.txt"
CHECK_SECONDS = 3.0
"""How long a passing or failing check runs: a stand-in for ``dcgmi diag -r 2`` and an NCCL
all-reduce, which take minutes on a real node. It also keeps the check after a reboot from
finishing before the reboot's remediation holds the node for it."""
OUTCOMES = ("pass", "fail", "hang")
_TYPE = "p5.48xlarge"


def agent_args(outcome: str) -> list[str]:
    """The simulated node's deep check (its NCCL all-reduce) finding ``outcome``: agent
    flags the world appends for the node, the chart's ``agent.deepCheckAtStart`` running the
    check at start (``agents.chart_values``)."""
    runs = {
        "pass": f"sleep {CHECK_SECONDS:g}; cat {shlex.quote(str(HEALTHY_ALL_REDUCE))}",
        "fail": f"sleep {CHECK_SECONDS:g}; cat {shlex.quote(str(DEGRADED_ALL_REDUCE))}",
        # The agent stops its machine's processes with it (``agents.AgentFleet``).
        "hang": "sleep infinity",
    }
    if outcome not in runs:
        raise ValueError(f"deep check outcome must be one of {OUTCOMES}, not {outcome!r}")
    minimum = minimum_for(NCCL_ALL_REDUCE_CHECK, _TYPE)
    assert minimum is not None, f"{_TYPE} has a least NCCL bus bandwidth"
    return [
        f"--all-reduce-perf=sh -c {shlex.quote(runs[outcome])}",
        f"--min-busbw={minimum.gbps:g}",
    ]
