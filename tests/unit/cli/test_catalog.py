"""``nodemedic catalog`` as a user checks a rule file of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import main

RULE = """\
schema: 1
rules:
  - id: site-psu-failure
    source: kmsg
    pattern: '{pattern}'
    component: cpu
    severity: fatal
    action: replace
    metric: SitePsuFailure
    example: 'ipmi: PSU 1 failure detected'
"""


@pytest.mark.parametrize(
    ("pattern", "code"),
    [
        ("^ipmi: PSU (?P<psu>\\d+) failure detected", 0),
        ("ipmi: PSU (?P<psu>\\d+) failure detected", 1),
        ("(?m)^ipmi: PSU (?P<psu>\\d+) failure detected", 1),
    ],
)
def test_a_kernel_rule_matched_anywhere_in_the_line_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pattern: str, code: int
) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(RULE.format(pattern=pattern))
    assert main(["catalog", "--catalog", str(mine)]) == code
    err = capsys.readouterr().err
    assert ("does not start with ^" in err and "site-psu-failure" in err) == bool(code)
