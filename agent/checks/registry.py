"""The health checks the agent knows: each check module registers itself here on import.

Modelled on node-problem-detector's log watchers: a check module calls ``register`` with
its name (what ``--checks`` lists), a function building the check from the agent's
``Config``, and its own command-line options. The command line, the ``--checks``
validation and ``agent.main.build_checks`` read only this registry, so adding a check
means no edit to them. Registration order is the order of ``--checks``' default, of the
options in ``--help`` and of the result lines; ``agent.checks`` imports the modules, and
importing it is what fills the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from agent.checks.base import Check

if TYPE_CHECKING:
    # Only for the annotations: agent.config imports this package for its defaults.
    from agent.config import Config

T = TypeVar("T")


@dataclass(frozen=True)
class Option(Generic[T]):
    """One command-line option of a check; its value reaches the check through
    ``Config.check_options`` under ``dest``, as argparse names it."""

    flag: str
    default: T
    help: str
    parse: Callable[[str], T]

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def value(self, check_options: Mapping[str, object]) -> T:
        """This option's value in ``check_options``; its default where it is left out."""
        return cast(T, check_options.get(self.dest, self.default))


@dataclass(frozen=True)
class Registration:
    name: str
    build: Callable[[Config], Check]
    options: tuple[Option[Any], ...]


_registered: dict[str, Registration] = {}


def register(name: str, build: Callable[[Config], Check], *options: Option[Any]) -> None:
    """Make a check known by ``name``; a second check of the same name is a mistake."""
    if name in _registered:
        raise ValueError(f"a health check named {name!r} is already registered")
    _registered[name] = Registration(name, build, options)


def registered() -> tuple[Registration, ...]:
    return tuple(_registered.values())


def names() -> tuple[str, ...]:
    return tuple(_registered)


def options() -> tuple[Option[Any], ...]:
    """Every registered check's options, in registration order."""
    return tuple(option for check in _registered.values() for option in check.options)
