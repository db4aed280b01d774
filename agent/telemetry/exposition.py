"""The Prometheus text exposition format (version 0.0.4), for metric families whose
names and labels other exporters chose.

Only what the format needs: ``# HELP`` and ``# TYPE`` once per family, label values
escaped (backslash, double quote, newline), integral values printed as integers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["gauge", "counter"]
Labels = Mapping[str, str]


@dataclass
class Family:
    name: str
    kind: Kind
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, labels: Labels, value: float) -> None:
        self.samples.append((labels, value))


def _escape(value: str, quote: bool = True) -> str:
    """Label values escape the double quote too; help texts only backslash and newline."""
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    return escaped.replace('"', '\\"') if quote else escaped


def _value(value: float) -> str:
    number = float(value)
    if number.is_integer() and abs(number) < 2**53:
        return str(int(number))
    return repr(number)


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def render(families: Iterable[Family]) -> str:
    """Families with at least one sample, in the order given; "" when none has one."""
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue
        out.append(f"# HELP {family.name} {_escape(family.help, quote=False)}")
        out.append(f"# TYPE {family.name} {family.kind}")
        out.extend(
            f"{family.name}{_labels(labels)} {_value(value)}" for labels, value in family.samples
        )
    return "".join(line + "\n" for line in out)
