"""How a setting is declared: its type (the annotation), its default, its bounds and its doc
(the docstring under it) in one statement, ``setting(...)``, as node-healthcheck-operator
declares its API fields with their markers. The checks of values, the types cdk.json must
give, the JSON Schema (``nodemedic.schemas``) and docs/deploy.md's table
(``scripts/generate_docs.py``) are all read from the declarations, so none of them can
say what another does not.

Everything here works on any dataclass of settings: it never imports the declarations.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import cache
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

T = TypeVar("T")
SPEC = "nodemedic.setting"
"""The key of a setting's ``Spec`` in its dataclass field's metadata."""


class SettingsError(ValueError):
    """Settings that cannot be used; ``errors`` lists every mistake, the message joins them."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class Spec:
    """What a setting's type alone does not say."""

    minimum: int | None = None
    maximum: int | None = None
    upto: str = ""
    """Another setting whose value this one may not pass (checked where both are known)."""
    zero: str = ""
    """What 0 means, said in the message of a value below 0 (``none``)."""
    one_of: tuple[int, ...] = ()
    """The only numbers allowed, where they are not a range."""
    per_group: bool = False
    """A node group may set its own (``group_overrides``)."""
    mapping: tuple[str, type] | None = None
    """An object in cdk.json (sorted pairs in the settings): what it maps to what, and the
    type of its values."""
    shown: str = ""
    """The default as the docs say it, where the value itself would mislead (``""``)."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON Schema words the type and the bounds do not give (a pattern, the items)."""
    checked_by: str = ""
    """The check that reports a bad value itself, in words of its own: the generic bound
    check leaves such a setting alone, so a mistake is told once."""


def setting(default: T, **spec: Any) -> T:
    """A setting with its default; ``spec``: the ``Spec``'s words."""
    declared: T = field(default=default, metadata={SPEC: Spec(**spec)})
    return declared


def required(**spec: Any) -> Any:
    """A setting without default: every entry gives it."""
    return field(metadata={SPEC: Spec(**spec)})


def spec_of(setting_field: Field[Any]) -> Spec:
    found = setting_field.metadata.get(SPEC)
    return found if isinstance(found, Spec) else Spec()


@cache
def specs(cls: type) -> dict[str, Spec]:
    return {f.name: spec_of(f) for f in fields(cls)}


@cache
def choices(cls: type) -> dict[str, tuple[Any, ...]]:
    """Setting → the values it may take, for the settings typed with a ``Literal``."""
    hints = get_type_hints(cls)
    return {
        f.name: get_args(hints[f.name]) for f in fields(cls) if get_origin(hints[f.name]) is Literal
    }


@cache
def kinds(cls: type) -> dict[str, type]:
    """Setting → the type of its value in cdk.json's terms (without default: str)."""
    return {f.name: str if f.default is MISSING else type(f.default) for f in fields(cls)}


@cache
def per_group(cls: type) -> tuple[str, ...]:
    """The settings a node group may set for its own nodes, in the order declared."""
    return tuple(name for name, spec in specs(cls).items() if spec.per_group)


@cache
def declared(cls: type) -> tuple[Field[Any], ...]:
    """The settings in the order a reader meets them: the class's own, then those it
    inherits (``fields`` puts a base class's first)."""
    own = inspect.get_annotations(cls)
    every = fields(cls)
    return (*(f for f in every if f.name in own), *(f for f in every if f.name not in own))


@cache
def docs(cls: type) -> dict[str, str]:
    """The docstring under each setting, on one line, the inherited ones' too."""
    found: dict[str, str] = {}
    for each in reversed(cls.__mro__):
        if each is not object and "__dataclass_fields__" in each.__dict__:
            found.update(_docs_of(each))
    return found


def _docs_of(cls: type) -> dict[str, str]:
    body = ast.parse(inspect.getsource(cls)).body[0]
    assert isinstance(body, ast.ClassDef)
    found = {}
    for statement, following in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[statement.target.id] = " ".join(following.value.value.split())
    return found


def bound_message(name: str, spec: Spec) -> str:
    """What a value out of its bounds is told."""
    if spec.minimum is not None and spec.maximum is not None:
        return f"{name} must be within {spec.minimum}..{spec.maximum}"
    if spec.minimum == 0:
        return f"{name} must be 0{f' ({spec.zero})' if spec.zero else ''} or more"
    return f"{name} must be at least {spec.minimum}"


def bound_errors(settings: object) -> list[str]:
    """Every value of ``settings`` outside its declared choices or bounds."""
    cls: type = type(settings)
    errors = []
    for name, spec in specs(cls).items():
        value = getattr(settings, name)
        allowed = choices(cls).get(name)
        if allowed is not None and value not in allowed:
            errors.append(f"{name} must be {' or '.join(allowed)}, not {value!r}")
        if spec.checked_by or not isinstance(value, int):
            continue
        low = spec.minimum is not None and value < spec.minimum
        if low or (spec.maximum is not None and value > spec.maximum):
            errors.append(bound_message(name, spec))
    return errors


def mapping_of(value: Any, kind: type) -> bool:
    """Whether ``value`` maps strings to values of ``kind`` (no bool where ``int``)."""
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, kind) and not (kind is int and isinstance(v, bool))
        for k, v in value.items()
    )


def pairs(value: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """An object of cdk.json as the settings keep it: sorted pairs, hashable."""
    return tuple(sorted(value.items()))


def type_errors(values: Mapping[str, Any], cls: type) -> dict[str, str]:
    """Setting → why its value has the wrong type. JSON from cdk.json or ``-c``:
    ``"node_groups": "trn1"`` would otherwise become the groups ``t``, ``r``, ``n``, ``1``,
    and ``"dry_run": "false"`` a true value."""
    errors = {}
    for name, kind in kinds(cls).items():
        if name not in values:
            continue
        value = values[name]
        mapping = specs(cls)[name].mapping
        if mapping is not None:
            wanted, of = mapping
            if not mapping_of(value, of):
                errors[name] = f"{name} must map {wanted}, not {value!r}"
        elif name == "group_overrides":
            errors.update(_override_type_errors(value, cls))
        elif kind is tuple:
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                errors[name] = f"{name} must be a list of strings, not {value!r}"
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                errors[name] = f"{name} must be a whole number, not {value!r}"
        elif not isinstance(value, kind):
            errors[name] = f"{name} must be a {kind.__name__}, not {value!r}"
    return errors


def _override_type_errors(value: Any, cls: type) -> dict[str, str]:
    """Each group's own settings are typed as the cluster's."""
    if not mapping_of(value, Mapping):
        return {
            "group_overrides": f"group_overrides must map node groups to objects, not {value!r}"
        }
    found = [
        f"group_overrides: {group!r}: {error}"
        for group, own in value.items()
        for error in type_errors(own, cls).values()
    ]
    return {"group_overrides": "; ".join(found)} if found else {}


def plain(values: Mapping[str, Any], cls: type) -> dict[str, Any]:
    """JSON's lists and objects as the settings keep them: tuples and sorted pairs."""
    kept = dict(values)
    for name, spec in specs(cls).items():
        if name not in kept:
            continue
        if spec.mapping is not None:
            kept[name] = pairs(kept[name])
        elif name == "group_overrides":
            kept[name] = pairs({group: pairs(plain(own, cls)) for group, own in kept[name].items()})
        elif kinds(cls)[name] is tuple:
            kept[name] = tuple(kept[name])
    return kept
