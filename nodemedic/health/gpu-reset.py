"""The GPU reset as the node runs it: refuse while a process holds the GPU, reset it alone,
verify it answers again. Shipped by ``nodemedic.health.gpu_reset.document`` and run by the
host's Python 3 (3.9) through SSM Run Command, after the rules of
``nodemedic.health.gpu_reset``; run on its own (``python3 gpu-reset.py <bus id>``) it imports
them.

What it prints last is one JSON line, ``{"gpu", "result", "detail"}``, and its exit status
says how it went (``EXIT``); the state machine reads the command's status: anything but
success falls back to a reboot.

NVIDIA's man page (``nvidia-smi --gpu-reset``): "There can't be any applications using these
devices"; persistence mode counts as one (NVSentinel found the reset refused "In use by
another client" while it is on), so it is turned off for the reset and back on after; and
"Following a reset, it is recommended that the health of each reset GPU be verified before
further use"."""

import json
import subprocess
import sys

from nodemedic.health.gpu_reset import compute_apps, holding, normalized

EXIT = {"reset": 0, "busy": 3, "failed": 4, "unhealthy": 5, "usage": 2}
"""The script's exit status per result: the command fails for every result but ``reset``."""
COMPUTE_APPS = (
    "nvidia-smi",
    "--query-compute-apps=gpu_bus_id,pid,process_name,used_memory",
    "--format=csv,noheader",
)
"""Every compute process of every GPU, one CSV row each, no header."""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stdout + done.stderr).split())[:300]


def reset(gpu: str) -> tuple[str, str]:
    """(result, detail): refuse while ``gpu`` is in use, reset it, check that it answers."""
    listed = _run(*COMPUTE_APPS)
    if listed.returncode != 0:
        return "failed", f"the compute apps query failed: {_said(listed)}"
    busy = holding(compute_apps(listed.stdout), gpu)
    if busy:
        return "busy", "in use by " + ", ".join(f"{a.name} (pid {a.pid})" for a in busy)
    persistent = _run(
        "nvidia-smi", "-i", gpu, "--query-gpu=persistence_mode", "--format=csv,noheader"
    )
    was_on = persistent.stdout.strip() == "Enabled"
    if was_on:
        _run("nvidia-smi", "-i", gpu, "-pm", "0")
    done = _run("nvidia-smi", "-r", "-i", gpu)
    if was_on:
        _run("nvidia-smi", "-i", gpu, "-pm", "1")
    if done.returncode != 0:
        return "failed", f"nvidia-smi -r exited {done.returncode}: {_said(done)}"
    check = _run(
        "nvidia-smi",
        "-i",
        gpu,
        "--query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total",
        "--format=csv,noheader",
    )
    cells = [c.strip() for c in check.stdout.split(",")]
    if check.returncode != 0 or len(cells) != 2 or normalized(cells[0]) != gpu:
        return "unhealthy", f"the GPU does not answer after the reset: {_said(check)}"
    if cells[1] not in ("0", "[N/A]", "N/A"):
        return "unhealthy", f"{cells[1]} uncorrected ECC errors after the reset"
    return "reset", _said(done)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(json.dumps({"gpu": None, "result": "usage", "detail": "usage: - <pci bus id>"}))
        return EXIT["usage"]
    gpu = normalized(argv[0])
    result, detail = reset(gpu)
    print(json.dumps({"gpu": gpu, "result": result, "detail": detail}))
    return EXIT[result]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
