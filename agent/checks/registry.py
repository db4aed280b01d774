"""What a health check declares about itself: its names, its builder and its options.

Modelled on node-problem-detector's log watchers and GPUd's components: a check module
defines ``REGISTRATION``, data and nothing else (importing it changes no state), and
``agent.checks.all`` lists every one in order. The command line, the ``--checks``
validation and ``agent.main.build_checks`` read only that list, so adding a check means no
edit to them.
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
    """One health check, by both its names: ``name`` is what ``--checks`` lists (people
    type it, scripts keep it: it does not change), ``line`` the ``check`` field of the
    result lines it writes (``nodemedic.contracts.health``, what the catalog's health rules
    match). ``build`` makes the check from the agent's ``Config``."""

    name: str
    line: str
    build: Callable[[Config], Check]
    options: tuple[Option[Any], ...] = ()
