"""The Prometheus text exposition read back with ``prometheus_client``'s own parser, as a
scraper reads it: samples by series, whatever the order of their labels."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def series(name: str, labels: Mapping[str, str]) -> str:
    """``name{label="value",...}`` as the text format writes it, labels sorted by name."""
    if not labels:
        return name
    pairs = ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{pairs}}}"


def canonical(key: str) -> str:
    """``key`` (a series as the text format writes it) with its labels sorted."""
    (family,) = text_string_to_metric_families(f"{key} 0\n")
    (sample,) = family.samples
    return series(sample.name, sample.labels)


class Samples(dict[str, float]):
    """A scrape's samples by series; a series is found with its labels in any order."""

    def __getitem__(self, key: str) -> float:
        return super().__getitem__(canonical(key))


def read_exposition(text: str) -> Samples:
    return Samples(
        {
            series(sample.name, sample.labels): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
    )
