"""A template is synthesized once per machine for the same inputs, and again whenever
one of its inputs changes: a stale template would test a stack nobody deploys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodemedic.settings import ClusterSettings
from stacks import synth_cache
from stacks.synth_cache import cached_template


class Synthesizer:
    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> dict[str, Any]:
        self.runs += 1
        return {"Resources": {"Run": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NODEMEDIC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "synth"


def test_the_same_inputs_are_synthesized_once_and_read_back_whole(cache: Path) -> None:
    synthesize = Synthesizer()
    settings = ClusterSettings(name="gpu")
    first = cached_template(settings, [], synthesize)
    again = cached_template(ClusterSettings(name="gpu"), [], synthesize)
    assert synthesize.runs == 1
    assert again == first
    assert [p.suffix for p in cache.iterdir()] == [".json"], "no partial file left"


def test_other_settings_are_another_template() -> None:
    synthesize = Synthesizer()
    cached_template(ClusterSettings(name="gpu"), [], synthesize)
    cached_template(ClusterSettings(name="gpu", dry_run=True), [], synthesize)
    assert synthesize.runs == 2


def test_an_extra_catalog_edited_in_place_is_another_template(tmp_path: Path) -> None:
    rules = tmp_path / "mine.yaml"
    rules.write_text("schema: 1\nrules: []\n")
    synthesize = Synthesizer()
    cached_template(ClusterSettings(name="gpu"), [rules], synthesize)
    rules.write_text("schema: 1\nrules: []\n# edited\n")
    cached_template(ClusterSettings(name="gpu"), [rules], synthesize)
    assert synthesize.runs == 2


def test_a_changed_source_file_is_another_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies of the packages stand in for the repository, one file then edited."""
    root = tmp_path / "repo"
    for name in ("stacks", "cdk.json"):
        source = synth_cache.ROOT / name
        if source.is_file():
            root.mkdir(exist_ok=True)
            (root / name).write_bytes(source.read_bytes())
        else:
            (root / name).mkdir(parents=True)
            (root / name / "pipeline.py").write_bytes((source / "pipeline.py").read_bytes())
    monkeypatch.setattr(synth_cache, "ROOT", root)
    monkeypatch.setattr(synth_cache, "SOURCES", ("stacks", "cdk.json"))
    synthesize = Synthesizer()
    for _ in range(2):
        synth_cache.source_digest.cache_clear()
        cached_template(ClusterSettings(name="gpu"), [], synthesize)
    assert synthesize.runs == 1
    with (root / "stacks" / "pipeline.py").open("a") as edited:
        edited.write("# edited\n")
    synth_cache.source_digest.cache_clear()
    cached_template(ClusterSettings(name="gpu"), [], synthesize)
    assert synthesize.runs == 2
    synth_cache.source_digest.cache_clear()
