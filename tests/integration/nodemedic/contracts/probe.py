"""Run by test_compat.py with one release's ``nodemedic`` first on ``sys.path``: what that
release writes (``write``) and how it reads what it is given (``read``), as JSON on standard
output. It names each contract where that release keeps it, so one probe speaks to every
release."""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any

NAMES = (
    "shipped_message",
    "split_injected",
    "previous_boot_message",
    "split_previous_boot",
    "split_signature",
    "SIGNATURE_MARK",
    "heartbeat_message",
    "parse_heartbeat",
    "node_log_group",
    "kmsg_stream",
    "health_stream",
    "deep_check_stream",
    "identity_stream",
    "group_pk",
    "cluster_pk",
    "job_pk",
    "HEARTBEAT_PK",
    "BREAKER_SK",
    "LOCK_SK",
    "DECISION_SK_PREFIX",
    "REBOOT_SK_PREFIX",
    "RATE_SK_PREFIX",
)
HOMES = (
    "nodemedic.contracts.logs",
    "nodemedic.contracts.ledger",
    "nodemedic.contracts.jobs",
    "nodemedic.contracts",
)


def contracts() -> dict[str, Any]:
    """Each name from the first module of ``HOMES`` that has it (0.1.0 kept them all in
    ``nodemedic.contracts``, 0.2.0 in one module per concern)."""
    modules: list[ModuleType] = []
    for home in HOMES:
        try:
            modules.append(importlib.import_module(home))
        except ImportError:
            continue
    found = {}
    for name in NAMES:
        for module in modules:
            if hasattr(module, name):
                found[name] = getattr(module, name)
                break
        else:
            raise SystemExit(f"probe: no {name} in {[m.__name__ for m in modules]}")
    return found


def write(c: dict[str, Any], heartbeat: dict[str, Any]) -> dict[str, Any]:
    kernel = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus."
    injected = c["shipped_message"](kernel, 1)
    return {
        "lines": {
            "kernel": c["shipped_message"](kernel, None),
            "injected": injected,
            "previous_boot": c["previous_boot_message"](injected, "0f0e-boot"),
            "signed": c["SIGNATURE_MARK"].format(key_id="0123abcd", mac="A" * 22) + kernel,
            "heartbeat": c["heartbeat_message"](heartbeat),
        },
        "names": {
            "log_group": c["node_log_group"]("gpu"),
            "streams": [
                c[f]("i-0abc") for f in ("kmsg_stream", "health_stream", "deep_check_stream")
            ]
            + [c["identity_stream"]("i-0abc")],
            "keys": [
                c["group_pk"]("trn1"),
                c["cluster_pk"]("gpu"),
                c["job_pk"]("team", "llama"),
                *(c[k] for k in ("HEARTBEAT_PK", "BREAKER_SK", "LOCK_SK")),
                *(c[k] for k in ("DECISION_SK_PREFIX", "REBOOT_SK_PREFIX", "RATE_SK_PREFIX")),
            ],
        },
    }


def read(c: dict[str, Any], lines: dict[str, str]) -> dict[str, Any]:
    def chain(text: str) -> dict[str, Any]:
        signature, rest = c["split_signature"](text)
        previous, rest = c["split_previous_boot"](rest)
        injected, rest = c["split_injected"](rest)
        return {
            "signature": signature and list(signature),
            "previous_boot": previous,
            "injected": injected,
            "text": rest,
            "heartbeat": c["parse_heartbeat"](rest),
        }

    return {name: chain(text) for name, text in lines.items()}


def main() -> None:
    request = json.load(sys.stdin)
    c = contracts()
    if request["do"] == "write":
        answer = write(c, request["heartbeat"])
    else:
        answer = read(c, request["lines"])
    json.dump({**answer, "package": importlib.import_module("nodemedic").__path__[0]}, sys.stdout)


if __name__ == "__main__":
    main()
