"""Realistic fault lines for the local mode and drills, taken from the catalog's examples.

The line goes to ``/dev/kmsg`` (root; one write is one record, with a ``<level>`` prefix
as the kernel expects from user space) or is appended to a file the agent follows.

Every line written here is an injected line, not a kernel one: the kernel records a write
to ``/dev/kmsg`` with the facility LOG_USER, a record appended to a file gets that
facility too, and a plain line has none. The agent ships such lines marked, and the
classifier lets them cordon, drain, reboot or replace a node only in a cluster whose
setting ``accept_injected_faults`` is on; elsewhere they are at most notified. The agent
signs them like every line it ships, so a drill passes ``proof_of_origin: enforce``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from nodemedic.catalog import Catalog, Rule

# Kernel log levels (KERN_CRIT, KERN_ERR, KERN_WARNING, KERN_INFO) by rule severity.
LEVELS = {"fatal": 2, "critical": 3, "warning": 4, "info": 6}
LOG_USER = 1
"""The facility the kernel gives a write to ``/dev/kmsg``; records appended to a file say
the same, so a drill never passes for the kernel."""
KINDS = ("xid", "neuron", "rule")


class InjectError(ValueError):
    pass


def find_rule(catalog: Catalog, kind: str, value: str) -> Rule:
    if kind == "xid":
        if not value.isdigit():
            raise InjectError(f"an Xid is a number, not {value!r}")
        return _rule(catalog, f"nvidia-xid-{int(value)}")
    if kind == "neuron":
        wanted = f"NEURON_HW_ERR={value.upper()} "
        for rule in catalog.rules:
            if rule.source == "kmsg" and rule.component == "neuron" and wanted in rule.example:
                return rule
        known = sorted(
            r.example.split("=", 1)[1].split()[0]
            for r in catalog.rules
            if r.component == "neuron" and r.example.startswith("NEURON_HW_ERR=")
        )
        raise InjectError(f"no Neuron error type {value!r}; known: {', '.join(known)}")
    if kind == "rule":
        return _rule(catalog, value)
    raise InjectError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")


def _rule(catalog: Catalog, rule_id: str) -> Rule:
    try:
        return catalog.rule(rule_id)
    except KeyError:
        raise InjectError(
            f"no rule {rule_id!r} in the catalog (`nodemedic catalog` lists them)"
        ) from None


_NAMES = {
    "instance-id": re.compile(r"\binstance-id=\S+"),
    "hostname": re.compile(r"\bhostname=\S+"),
}
"""Fields of a line that name the node it came from (Neuron's driver writes both): the
catalog's example names the instance it was recorded on, which is never this one."""


def line_for(rule: Rule, *, instance_id: str = "", hostname: str = "") -> str:
    """The rule's example line, naming this node where it names one and the caller says it."""
    if rule.source != "kmsg":
        raise InjectError(
            f"rule {rule.id} matches health check results, not kernel lines; "
            "the agent's health checks produce those"
        )
    if not rule.example:
        raise InjectError(f"rule {rule.id} has no example line")
    line = rule.example
    for field, value in (("instance-id", instance_id), ("hostname", hostname)):
        if value:
            line = _NAMES[field].sub(f"{field}={value}", line)
    return line


def write_device(path: Path, line: str, level: int) -> None:
    """One ``write`` to ``/dev/kmsg`` becomes one kernel log record (printk drops the
    trailing newline; some emulated kernels wait for it before they log the line)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, f"<{level}>{line}\n".encode())
    finally:
        os.close(fd)


def _needs_newline(path: Path) -> bool:
    """True if the file's last line is unterminated (our line must not join it)."""
    try:
        with path.open("rb") as handle:
            if handle.seek(0, os.SEEK_END) == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except FileNotFoundError:
        return False


def _line_count(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def append_file(path: Path, line: str, level: int, record: bool) -> str:
    """Append ``line`` (as a raw kmsg record of facility LOG_USER if ``record``); returns
    the text written."""
    prefix = "\n" if _needs_newline(path) else ""
    if record:
        seq = _line_count(path) + len(prefix)
        ts_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        line = f"{LOG_USER * 8 + level},{seq},{ts_us},-;{line}"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}{line}\n")
    return line
