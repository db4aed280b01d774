"""A misspelt setting is named with the one it most likely means, wherever it is written."""

from __future__ import annotations

import pytest

from nodemedic.settings.parse import parse_cluster


def _mistakes(raw: dict[str, object]) -> str:
    with pytest.raises(ValueError) as caught:
        parse_cluster(raw)
    return str(caught.value)


def test_a_misspelt_cluster_setting_gets_a_guess() -> None:
    said = _mistakes({"name": "demo", "max_paralel": 3, "colour": "blue"})
    assert "max_paralel (did you mean max_parallel?)" in said
    assert "colour" in said and "colour (did you mean" not in said


def test_a_misspelt_group_setting_and_group_get_guesses_beside_the_other_mistakes() -> None:
    said = _mistakes(
        {
            "name": "demo",
            "node_groups": ["gpu-a"],
            "breaker_cooldown": -5,
            "group_overrides": {"gpu-b": {"drain_timout": 60, "drain_timeout": -1}},
        }
    )
    assert "'gpu-b' is not in node_groups (did you mean gpu-a?)" in said
    assert "drain_timout (did you mean drain_timeout?) cannot be set per group" in said
    assert "'gpu-b': drain_timeout must be at least 1" in said
    assert "breaker_cooldown must be at least 1" in said
