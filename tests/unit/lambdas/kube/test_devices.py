"""The Node's device record as the drain reads it (lambdas/kube/devices.py): written with
the agent's token, so a record too large or too deep is no record, never an error."""

from __future__ import annotations

import json

import pytest

from lambdas.kube.devices import MAX_RECORD_CHARS, parse_record

RECORD = {"train/rank-0": ["0", "GPU-1f2e", "00000000:53:00.0"], "train/rank-1": ["1"]}


def test_the_agents_record_is_read() -> None:
    assert parse_record(json.dumps(RECORD)) == RECORD


def test_brackets_inside_names_are_no_nesting() -> None:
    odd = {'train/a"[[[[[[': ["{{{{{{"]}

    assert parse_record(json.dumps(odd)) == odd


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "[" * 10 + "]" * 10 + "}",
        json.dumps({"p": ["x" * MAX_RECORD_CHARS]}),
        "{not json",
        "",
        None,
    ],
)
def test_a_record_too_deep_too_large_or_not_json_is_none(raw: str | None) -> None:
    """None: the drain takes every pod, as a node-level repair does; a 100,000-deep record
    once raised RecursionError and failed every drain round."""
    assert parse_record(raw) is None
