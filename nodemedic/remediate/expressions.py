"""DynamoDB condition and update expressions as values that render to DynamoDB's text and
also evaluate against an item in memory.

The ledger's rules (``nodemedic.remediate.ledger``) are written with these, so the text the
state machine sends and the behaviour the unit tests check come from the same object: a
rule cannot say one thing in the stack and another in its test. Only what the ledger uses
is modelled: comparisons, ``attribute_(not_)exists``, ``size``, ``contains``, ``AND``/``OR``
and the ``SET``, ``ADD``, ``DELETE`` and ``REMOVE`` update actions.

In memory an item is a plain dict (strings, numbers, ``frozenset`` for a string set) and the
values are keyed by placeholder (``":now"``); a missing item is ``{}``, as DynamoDB
evaluates a condition on a put or update of an item that does not exist.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Item = Mapping[str, Any]
Values = Mapping[str, Any]

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
}


@dataclass(frozen=True)
class Condition:
    """``text`` as DynamoDB reads it; ``holds`` evaluates the same rule on an item."""

    text: str
    placeholders: frozenset[str]
    holds: Callable[[Item, Values], bool]
    joined_by: str = ""
    """``AND`` or ``OR`` for a compound condition: another kind around it needs parentheses."""

    def _inside(self, joiner: str) -> str:
        return f"({self.text})" if self.joined_by and self.joined_by != joiner else self.text


def missing(attribute: str) -> Condition:
    return Condition(
        f"attribute_not_exists({attribute})", frozenset(), lambda item, _: attribute not in item
    )


def present(attribute: str) -> Condition:
    return Condition(
        f"attribute_exists({attribute})", frozenset(), lambda item, _: attribute in item
    )


def compare(attribute: str, comparison: str, placeholder: str) -> Condition:
    """``attribute <comparison> placeholder``; false when the attribute is missing, as in
    DynamoDB (even for ``<>``)."""
    test = _COMPARISONS[comparison]
    return Condition(
        f"{attribute} {comparison} {placeholder}",
        frozenset({placeholder}),
        lambda item, values: attribute in item and test(item[attribute], values[placeholder]),
    )


def smaller_than(attribute: str, placeholder: str) -> Condition:
    """``size(attribute) < placeholder``: fewer members than that in a set."""
    return Condition(
        f"size({attribute}) < {placeholder}",
        frozenset({placeholder}),
        lambda item, values: attribute in item and len(item[attribute]) < values[placeholder],
    )


def contains(attribute: str, placeholder: str) -> Condition:
    return Condition(
        f"contains({attribute}, {placeholder})",
        frozenset({placeholder}),
        lambda item, values: attribute in item and values[placeholder] in item[attribute],
    )


def either(*conditions: Condition) -> Condition:
    return _join("OR", any, conditions)


def every(*conditions: Condition) -> Condition:
    return _join("AND", all, conditions)


def _join(
    joiner: str, combine: Callable[[Any], bool], conditions: tuple[Condition, ...]
) -> Condition:
    return Condition(
        f" {joiner} ".join(c._inside(joiner) for c in conditions),
        frozenset().union(*(c.placeholders for c in conditions)),
        lambda item, values: combine(c.holds(item, values) for c in conditions),
        joined_by=joiner,
    )


@dataclass(frozen=True)
class Action:
    """One clause of an update: ``SET attribute = placeholder``, ``ADD`` to or ``DELETE``
    from a set."""

    verb: str
    attribute: str
    placeholder: str


def assign(attribute: str, placeholder: str) -> Action:
    return Action("SET", attribute, placeholder)


def add_members(attribute: str, placeholder: str) -> Action:
    return Action("ADD", attribute, placeholder)


def delete_members(attribute: str, placeholder: str) -> Action:
    return Action("DELETE", attribute, placeholder)


def remove(attribute: str) -> Action:
    """``REMOVE attribute``: takes no value."""
    return Action("REMOVE", attribute, "")


_VERBS = ("ADD", "DELETE", "REMOVE", "SET")


@dataclass(frozen=True)
class Update:
    """An update expression. Attributes in ``aliased`` are written ``#name`` (DynamoDB
    reserved words such as ``limit``, ``state``): ``names`` maps them back."""

    actions: tuple[Action, ...]
    aliased: tuple[str, ...] = ()

    def _name(self, attribute: str) -> str:
        return f"#{attribute}" if attribute in self.aliased else attribute

    @property
    def text(self) -> str:
        clauses = []
        for verb in _VERBS:
            parts = [a for a in self.actions if a.verb == verb]
            if not parts:
                continue
            terms = [
                f"{self._name(a.attribute)} = {a.placeholder}"
                if verb == "SET"
                else f"{self._name(a.attribute)} {a.placeholder}".rstrip()
                for a in parts
            ]
            clauses.append(f"{verb} {', '.join(terms)}")
        return " ".join(clauses)

    @property
    def names(self) -> dict[str, str]:
        return {f"#{name}": name for name in self.aliased}

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(a.placeholder for a in self.actions if a.placeholder)

    def apply(self, item: Item, values: Values) -> dict[str, Any]:
        """The item after the update. DynamoDB removes a set that ``DELETE`` empties: no
        attribute, not an empty set."""
        after = dict(item)
        for action in self.actions:
            if action.verb == "REMOVE":
                after.pop(action.attribute, None)
                continue
            value = values[action.placeholder]
            if action.verb == "SET":
                after[action.attribute] = value
                continue
            members = frozenset(after.get(action.attribute, frozenset()))
            members = members | value if action.verb == "ADD" else members - value
            if members:
                after[action.attribute] = members
            else:
                after.pop(action.attribute, None)
        return after


def update(*actions: Action, aliased: tuple[str, ...] = ()) -> Update:
    return Update(actions, aliased)
