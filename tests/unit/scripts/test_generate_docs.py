"""The docs' generated blocks: each page as committed is the page generated from the code."""

from __future__ import annotations

import pytest

from scripts import generate_docs
from scripts.floors import HOLDS


@pytest.mark.parametrize("page", sorted(generate_docs.BLOCKS))
def test_the_committed_page_is_the_generated_one(page: str) -> None:
    """Regenerate with ``make generated`` after changing a setting, a floor, a Lambda
    function or a command."""
    committed = (generate_docs.DOCS / page).read_text(encoding="utf-8")
    assert committed == generate_docs.rendered(page)


def test_a_page_without_its_markers_is_an_error() -> None:
    with pytest.raises(ValueError, match="no generated block 'settings'"):
        generate_docs.replaced("| setting | default |\n", "settings", "new")


def test_a_block_is_replaced_whole_and_nothing_else() -> None:
    marker = "<!-- generated: x (python -m scripts.generate_docs) -->"
    page = f"before\n{marker}\nold\nlines\n<!-- end: x -->\nafter\n"
    assert generate_docs.replaced(page, "x", "new") == (
        f"before\n{marker}\nnew\n<!-- end: x -->\nafter\n"
    )


def test_every_setting_has_its_row_with_its_default_and_bounds() -> None:
    table = generate_docs.settings_table()
    assert "| `max_parallel` | `2` | ≥ 1 | yes |" in table
    assert "| `max_unhealthy_percent` | `20` | 0..100 | yes |" in table
    assert "| `fleet_settle` | `60` | 0..`fleet_window` |  |" in table
    assert "| `name` | (required) |" in table
    assert "| `eks_cluster_name` | `name` |" in table
    assert "| `approval` | `none` | `none`, `replace`, `any` | yes |" in table


def test_every_lambda_function_and_every_command_is_listed() -> None:
    functions = generate_docs.lambda_list()
    for name in ("classify", "jobs", "kube", "planned", "policy"):
        assert f"- `lambdas/{name}/`: " in functions
    commands = generate_docs.command_list()
    assert commands.count("- `nodemedic ") >= 16
    assert "- `nodemedic take-back`: " in commands


def test_every_room_is_described() -> None:
    table = generate_docs.floor_table()
    for room in HOLDS:
        if room != "nodemedic":
            assert f"{room}" in table
    assert "| `lambdas/` |" in table
    assert "| `nodemedic/remediate/` |" in table


def test_a_family_is_listed_by_whole_words_of_its_files_names() -> None:
    assert generate_docs._of_family("/checks/efa.py", ("efa",))
    assert generate_docs._of_family("/dumps/fi_info.py", ("fi_info",))
    assert not generate_docs._of_family("/default.py", ("efa",))
    table = generate_docs.family_table()
    assert "| EFA | " in table
    assert "`checks/efa.py`" in table.split("| EFA | ")[1]
    assert "`health/gpu_reset.py`" in table.split("| NVIDIA | ")[1].split("\n")[0]
