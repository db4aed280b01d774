"""A rule's pattern: what every match of it must hold, and compiled to match, with ``re``
or, for a user's rule, RE2."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, Protocol

# The stdlib's own regex parser, only to find the literals a pattern requires (3.11+).
sre_parse: Any = import_module("re._parser")

_MIN_NEEDLE = 3
PREFIX = 3
"""Characters of a message that ``prefixes`` tells rules apart by."""
_MAX_PREFIXES = 64


class Found(Protocol):
    """What a rule uses of a match, ``re``'s or RE2's."""

    def group(self, name: str, /) -> str | None: ...

    def groupdict(self) -> dict[str, str | None]: ...


class Searcher(Protocol):
    @property
    def pattern(self) -> str: ...

    def search(self, text: str, /) -> Found | None: ...


def compiled(pattern: str, *, linear: bool) -> Searcher:
    """``pattern`` compiled with RE2 where it must match in time ``linear`` in the line (a
    user's rule: ``catalog.linear_error`` refused at load any pattern RE2 cannot run), else
    with ``re``, which matches a line several times faster than RE2 from Python."""
    if not linear:
        return re.compile(pattern)
    import re2  # only a user's rule needs it (``catalog.linear_error`` says why)

    searcher: Searcher = re2.compile(pattern)
    return searcher


_NAMED_GROUP = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\(\?P<\w+>", re.S)
"""An escape, a character class (both passed over as they are) or the opening of a named
group: how ``_unnamed`` tells a group's ``(?P<`` from the same characters in a class."""


def _unnamed(pattern: str) -> str:
    """``pattern`` with its named groups made non-capturing: the same matches, and no name
    that another pattern's group could clash with in one alternation."""
    return _NAMED_GROUP.sub(lambda m: "(?:" if m[0][0] == "(" else m[0], pattern)


def _refers(value: Any) -> bool:
    """A parsed pattern (or part of one) refers back to a group: ``(?P=name)``, ``\\1`` or
    ``(?(1)...)``, which making its groups non-capturing would break or renumber."""
    if isinstance(value, sre_parse.SubPattern):
        value = value.data
    if isinstance(value, list | tuple):
        return any(
            item is sre_parse.GROUPREF or item is sre_parse.GROUPREF_EXISTS or _refers(item)
            for item in value
        )
    return False


def matches_any(searchers: Sequence[Searcher]) -> Callable[[str], object] | None:
    """One call, at C speed, that is truthy for a text at whose start one of ``searchers``
    (each anchored, ``anchored``) matches: the alternation of their patterns, compiled once.
    None where it cannot be made so: a RE2 searcher (a user's rule must not be run by
    ``re``), a pattern that refers back to a group or sets a flag for the whole text (at the
    start of an alternation, it would hold for every pattern of it)."""
    if any(not isinstance(searcher, re.Pattern) for searcher in searchers):
        return None
    patterns = [searcher.pattern for searcher in searchers]
    parsed = [sre_parse.parse(pattern) for pattern in patterns]
    if any(p.state.flags & ~re.UNICODE or _refers(p) for p in parsed):
        return None
    # Each pattern starts with "^", so none has a "|" of its own at the top: joined bare,
    # the alternatives' common start ("NVRM: ") is matched once.
    return re.compile("|".join(map(_unnamed, patterns))).match


def required_literals(pattern: str) -> list[str]:
    """Every literal run that every match of ``pattern`` contains, in order; none for a
    case-insensitive pattern (a plain ``in`` test would wrongly reject lines).

    Only top-level literal runs count: anything inside a repeat or an alternation may be
    absent from a match. Any part of a run is a literal every match contains too.
    """
    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return []
    runs, run = [], []
    for op, arg in [*parsed, (None, None)]:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            runs.append("".join(run))
        run = []
    return runs


def holds(pattern: str, literal: str) -> bool:
    """Whether every match of ``pattern`` contains ``literal``: it lies in one of its
    required literal runs."""
    return any(literal in run for run in required_literals(pattern))


def required_literal(pattern: str) -> str | None:
    """The longest literal that every match of ``pattern`` contains, or None."""
    best = max(required_literals(pattern), key=len, default="")
    return best if len(best) >= _MIN_NEEDLE else None


def anchored(pattern: str) -> bool:
    """Every match of ``pattern`` starts where the text starts: its first top-level element
    is ``^`` (or ``\\A``), not one branch of a top-level ``|``, and no MULTILINE flag lets
    ``^`` match after a newline. A kernel rule must be: searched anywhere, its text could
    be met inside a process name, a file path or a user message that a kernel line quotes
    after its own head."""
    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & re.MULTILINE or not len(parsed):
        return False
    return bool(
        parsed[0]
        in ((sre_parse.AT, sre_parse.AT_BEGINNING), (sre_parse.AT, sre_parse.AT_BEGINNING_STRING))
    )


def prefixes(pattern: str) -> frozenset[str] | None:
    """Every ``PREFIX``-character start a match of ``pattern`` can have, or None where the
    pattern does not say it in a few (not anchored at the text's start, a class or a
    repeat before ``PREFIX`` characters, more than ``_MAX_PREFIXES``). A message can then
    match only where its first characters are one of them: one lookup a line instead of
    a search for the pattern's needle."""
    if not anchored(pattern):
        return None
    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return None
    found = _starts(list(parsed)[1:], frozenset({""}))
    if found is None or any(len(start) < PREFIX for start in found):
        return None
    return frozenset(start[:PREFIX] for start in found)


def _starts(items: list[tuple[Any, Any]], starts: frozenset[str]) -> frozenset[str] | None:
    """``starts`` each followed by what ``items`` (parsed elements) can match first, up to
    ``PREFIX`` characters; None where that is not a short list of literals."""
    for op, arg in items:
        if all(len(start) >= PREFIX for start in starts):
            break
        stepped = _step(op, arg, starts)
        if stepped is None or len(stepped) > _MAX_PREFIXES:
            return None
        starts = stepped
    return starts


def _literals(members: list[tuple[Any, Any]]) -> list[str] | None:
    """The characters of a class made only of literals and short ranges; None for a
    negated class, a category (``\\d``, ``\\w``) or more than ``_MAX_PREFIXES``."""
    chars: list[str] = []
    for op, arg in members:
        if op is sre_parse.LITERAL:
            chars.append(chr(arg))
        elif op is sre_parse.RANGE and arg[1] - arg[0] < _MAX_PREFIXES:
            chars.extend(chr(c) for c in range(arg[0], arg[1] + 1))
        else:
            return None
    return chars if len(chars) <= _MAX_PREFIXES else None


def _step(op: Any, arg: Any, starts: frozenset[str]) -> frozenset[str] | None:
    """``starts`` followed by what one element can match first: a literal, a class of
    literals (``sre_parse`` makes one of ``(?:ib0|ib1|ibp)``'s last characters), a group,
    a branch, an optional (or once-repeated) element; None for anything else."""
    if op is sre_parse.LITERAL or op is sre_parse.IN:
        chars = [chr(arg)] if op is sre_parse.LITERAL else _literals(arg)
        if chars is None:
            return None
        return frozenset(s + c if len(s) < PREFIX else s for s in starts for c in chars)
    if op is sre_parse.SUBPATTERN:
        return None if arg[1] or arg[2] else _starts(list(arg[3]), starts)
    if op is sre_parse.BRANCH:
        branches = [_starts(list(branch), starts) for branch in arg[1]]
        return None if None in branches else frozenset().union(*branches)  # type: ignore[arg-type]
    if op is sre_parse.MAX_REPEAT and arg[0] <= 1 and arg[1] == 1:
        once = _starts(list(arg[2]), starts)
        return None if once is None else once if arg[0] else starts | once
    return None
