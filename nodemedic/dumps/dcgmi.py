"""``dcgmi diag``: DCGM's active diagnostics, as its table or as ``-j`` JSON.

A test that failed on a GPU is a ``fail`` of that GPU (``DiagFail``, the test named in the
figures); one that warned is a ``warn``. The catalog's ``dcgmi-diag-fail`` rule says what a
failure asks for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from nodemedic.contracts.health import DCGMI_DIAG_CHECK
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Figure, Result, Status

NAME = "dcgmi-diag"
_HEADER = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|", re.MULTILINE)
_RESULT_ROW = re.compile(r"^\|[^|]*\|\s*(?:Pass|Fail|Warn|Skip)\b", re.MULTILINE)
"""A result row, for an excerpt pasted without the table's header."""
_ROW = re.compile(r"^\|\s*(?P<test>[^|]*?)\s*\|\s*(?P<result>[^|]*?)\s*\|?\s*$")
_GPUS = re.compile(r"\d+")
_DETAIL_ROWS = {"warning", "info", "error"}
_STATUS: dict[str, Status] = {"fail": "fail", "warn": "warn"}


def recognise(text: str) -> bool:
    if '"DCGM GPU Diagnostic"' in text[:4096]:
        return True
    return bool(_HEADER.search(text) or _RESULT_ROW.search(text))


def _devices(gpus: str) -> list[str]:
    """``All`` / ``GPU: 1`` / ``GPUs: 0, 2`` / ``GPU 3`` → the devices it names."""
    found = _GPUS.findall(gpus)
    return [f"gpu{n}" for n in found] or ["node"]


def _table(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(test, status word, devices) for each result in the table; a row with no test name
    continues the test above it (``Pass - GPUs: 1, 2`` then ``Fail - GPU: 0``). An
    ``Error`` row is a failure of the test above it, on the GPU its text names."""
    test, header = "", _HEADER.search(text)
    for line in text[header.end() if header else 0 :].splitlines():
        row = _ROW.match(line)
        if not row or row["test"].startswith("-"):
            continue
        name, result = row["test"], row["result"]
        if name.lower() == "error":
            yield test or "Deployment", "fail", _devices(" ".join(re.findall(r"GPU \d+", result)))
            continue
        if name and name.lower() not in _DETAIL_ROWS:
            test = name
        elif name:
            continue
        word, _, gpus = result.partition(" - ")
        yield test, word.strip().lower(), _devices(gpus)


def _json(text: str) -> Iterator[tuple[str, str, list[str]]]:
    report: dict[str, Any] = json.loads(text)["DCGM GPU Diagnostic"]
    for category in report.get("test_categories", []):
        for test in category.get("tests", []):
            for result in test.get("results", []):
                gpus = str(result.get("gpu_ids", result.get("gpu_id", "")))
                yield test["name"], str(result.get("status", "")).lower(), _devices(gpus)


def evaluate(text: str, expected: Devices | None, ts: str) -> list[Result]:
    """One result per test and device that failed or warned; one ``ok`` when none did."""
    del expected  # dcgmi says nothing about how many GPUs there should be
    try:
        outcomes = list(_json(text) if text.lstrip().startswith("{") else _table(text))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"dcgmi diag output that cannot be read: {exc}") from None
    results = [
        Result(
            DCGMI_DIAG_CHECK,
            device,
            _STATUS[word],
            f"Diag{_STATUS[word].capitalize()}",
            {"test": test},
            ts,
        )
        for test, word, devices in outcomes
        if word in _STATUS
        for device in devices
    ]
    figures: dict[str, Figure] = {"tests": len({test for test, _, _ in outcomes})}
    return results or [Result(DCGMI_DIAG_CHECK, "node", "ok", "Healthy", figures, ts)]
