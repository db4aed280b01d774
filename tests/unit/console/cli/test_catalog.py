"""``nodemedic catalog`` as a user checks a rule file of their own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.cli import main
from nodemedic.catalog import CatalogError, load_catalog
from nodemedic.contracts.env import ENV_CATALOG_EXTRA
from tests.support.triage import fault_records

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


AER = "pcieport 0000 00 01 0 AER Uncorrected Fatal error received from 0000 00 01 0 ids!"
"""An 81-character line on which ``^pcieport (\\w+\\s?)+$`` backtracks for ever with ``re``
(42 characters take a second, each one more doubles it)."""


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("^ipmi: PSU (\\d) failure (?=detected)", "invalid perl operator"),
        ("^ipmi: PSU (\\d+) failure \\1", "invalid escape sequence"),
    ],
)
def test_a_pattern_that_needs_backtracking_is_refused_with_its_reason(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pattern: str,
    reason: str,
) -> None:
    """At ``catalog --check`` as at load (the classifier's cold start, the stack's synth
    reading NODEMEDIC_CATALOG_EXTRA): no rule reaches a node's lines that can cost more
    than linear time on one."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(RULE.format(pattern=pattern))
    started = time.process_time()
    assert main(["catalog", "--check", "--catalog", str(mine)]) == 2
    assert time.process_time() - started < 1, "CPU seconds, whatever else the machine runs"
    err = capsys.readouterr().err
    assert "rule site-psu-failure" in err and "linear time" in err and reason in err
    monkeypatch.setenv(ENV_CATALOG_EXTRA, str(mine))
    with pytest.raises(CatalogError, match=r"site-psu-failure.*linear time"):
        load_catalog()


def test_a_user_pattern_costs_linear_time_on_a_line_it_would_backtrack_on(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        RULE.format(pattern="^pcieport (\\w+\\s?)+$").replace(
            "'ipmi: PSU 1 failure detected'", "'pcieport link up'"
        )
    )
    log = tmp_path / "dmesg.txt"
    log.write_text(f"[  764.649502] {AER}\n[  764.649503] pcieport link up\n")
    command = ["triage", "--format", "json", "--catalog", str(mine), str(log)]
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", *command],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [r["line_no"] for r in fault_records(done.stdout)] == [2]
