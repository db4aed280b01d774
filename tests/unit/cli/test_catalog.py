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


def test_check_reports_every_mistake_of_a_file_at_once_and_prints_no_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mine = tmp_path / "mine.yaml"
    broken = RULE.format(pattern="^ipmi: PSU (").replace("severity: fatal", "severity: dire")
    mine.write_text(broken)
    assert main(["catalog", "--check", "--catalog", str(mine)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "site-psu-failure" in err and "pattern does not compile" in err and "dire" in err
    mine.write_text(RULE.format(pattern="^ipmi: PSU (?P<psu>\\d+) failure detected"))
    assert main(["catalog", "--check", "--catalog", str(mine)]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines() == [out.strip()]
    assert "rules valid: the built-in catalog and 1 file of yours" in out
