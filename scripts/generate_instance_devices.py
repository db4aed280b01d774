"""Write ``nodemedic/health/instance_devices.json``: the GPUs, Neuron devices and EFA
interfaces of each EC2 instance type that has any.

The figures are EC2 ``DescribeInstanceTypes``' own (``GpuInfo.Gpus[].Count``,
``NeuronInfo.NeuronDevices[].Count`` or, for older Inferentia types,
``InferenceAcceleratorInfo.Accelerators[].Count``, ``NetworkInfo.EfaInfo
.MaximumEfaInterfaces``), as moto ships them in ``moto/ec2/resources/instance_types.json.gz``
(moto records the API's answer per type). Run ``make instance-devices`` after upgrading
moto; ``tests/unit/agent/test_instance_devices.py`` fails while the written file is stale.
"""

from __future__ import annotations

import gzip
import json
from importlib import metadata, resources
from typing import Any

from nodemedic.health.instance_types import TABLE

SOURCE = "moto/ec2/resources/instance_types.json.gz (EC2 DescribeInstanceTypes, as moto records it)"


def _total(items: list[dict[str, Any]]) -> int:
    return sum(int(item.get("Count", 0)) for item in items)


def devices(info: dict[str, Any]) -> dict[str, int]:
    """One type's non-zero counts, by the table's keys."""
    neuron = info.get("NeuronInfo", {}).get("NeuronDevices")
    if neuron is None:
        accelerators = info.get("InferenceAcceleratorInfo", {}).get("Accelerators", [])
        neuron = [a for a in accelerators if a.get("Manufacturer") == "AWS"]
    counts = {
        "gpus": _total(info.get("GpuInfo", {}).get("Gpus", [])),
        "neuron_devices": _total(neuron),
        "efa_interfaces": int(
            info.get("NetworkInfo", {}).get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)
        ),
    }
    return {key: value for key, value in counts.items() if value}


def render(instance_types: dict[str, dict[str, Any]], moto_version: str) -> str:
    rows = {name: devices(info) for name, info in sorted(instance_types.items())}
    lines = [f"    {json.dumps(name)}: {json.dumps(row)}" for name, row in rows.items() if row]
    header = json.dumps({"source": SOURCE, "moto_version": moto_version})[1:-1]
    return "{\n  " + header + ',\n  "types": {\n' + ",\n".join(lines) + "\n  }\n}\n"


def from_moto() -> str:
    """The table as the installed moto's data makes it."""
    data = resources.files("moto.ec2").joinpath("resources/instance_types.json.gz")
    with data.open("rb") as raw, gzip.open(raw) as unzipped:
        instance_types = json.load(unzipped)
    return render(instance_types, metadata.version("moto"))


def main() -> None:
    TABLE.write_text(from_moto(), encoding="utf-8")
    print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
