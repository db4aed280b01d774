"""The checkpoint line that answers a drain's request (nodemedic/jobs/checkpoint.py)."""

from __future__ import annotations

from nodemedic.jobs.checkpoint import saved_at
from nodemedic.jobs.rules import rules_of

RULES = rules_of(
    [
        {"name": "checkpoint", "logPattern": r".*saved checkpoint step (\d+).*"},
        {"name": "JobStart", "logPattern": ".*epoch 0.*", "expectedStartCutOffInSeconds": 60},
    ]
)


def test_the_first_checkpoint_line_since_the_request_answers() -> None:
    lines = [
        (90.0, "saved checkpoint step 100"),
        (101.0, "epoch 3 step 120"),
        (104.0, "saved checkpoint step 121"),
        (107.0, "saved checkpoint step 122"),
    ]

    assert saved_at(RULES, "checkpoint", lines, since=100.0) == 104.0


def test_no_answer_without_the_rule_or_a_line_since_the_request() -> None:
    lines = [(90.0, "saved checkpoint step 100"), (101.0, "epoch 0 step 1")]

    assert saved_at(RULES, "checkpoint", lines, since=100.0) is None
    assert saved_at(RULES, "Checkpointed", [(104.0, "saved checkpoint step 1")], 100.0) is None
