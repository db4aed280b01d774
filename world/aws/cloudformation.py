"""What CloudFormation does with a template's values, for the local world's ``deploy``.

``Deployment`` holds what was created, by logical id: each resource's ``Ref`` value and its
``Fn::GetAtt`` attributes. ``Resolver`` resolves ``Ref``, ``Fn::GetAtt``, ``Fn::Join``,
``Fn::Sub``, ``Fn::Select``, ``Fn::Split`` and the pseudo parameters against it; any other
intrinsic function is a ``TemplateError``, not a silently wrong value. ``creation_order``
orders the resources as CloudFormation does: each after those it refers to or depends on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from typing import Any

_SUB = re.compile(r"\$\{([^}!][^}]*)\}")


class TemplateError(ValueError):
    """The template uses something the local world cannot create faithfully."""


@dataclass
class Resource:
    logical_id: str
    type: str
    ref: str
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def arn(self) -> str:
        return self.attributes["Arn"]


@dataclass
class Deployment:
    """What was created: resources by logical id, as CloudFormation would name them."""

    stack_name: str
    region: str
    account: str
    resources: dict[str, Resource] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    """The stack's outputs by name (``StateMachineArn``, ``TopicArn``, ...), resolved."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Logical ids of the resources not created, with the reason (``SKIPPED``)."""

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources.values() if r.type == type_]

    def find(self, type_: str, prefix: str = "") -> Resource:
        """The one resource of ``type_`` whose logical id starts with ``prefix`` (CDK logical
        ids begin with the construct path, e.g. ``RemediationStateMachine``)."""
        found = [r for r in self.of_type(type_) if r.logical_id.startswith(prefix)]
        if len(found) != 1:
            names = [r.logical_id for r in found]
            raise KeyError(f"expected one {type_} starting with {prefix!r}, found {names}")
        return found[0]


class Resolver:
    """Resolves intrinsic functions and pseudo parameters against what is deployed so far."""

    def __init__(self, template: Mapping[str, Any], deployment: Deployment) -> None:
        self.template = template
        self.deployment = deployment
        self.pseudo = {
            "AWS::Region": deployment.region,
            "AWS::AccountId": deployment.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": deployment.stack_name,
            "AWS::StackId": (
                f"arn:aws:cloudformation:{deployment.region}:{deployment.account}:"
                f"stack/{deployment.stack_name}/local"
            ),
        }

    def ref(self, name: str) -> str:
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.deployment.resources:
            return self.deployment.resources[name].ref
        if name in self.deployment.skipped:
            raise TemplateError(f"Ref to {name!r}, skipped: {self.deployment.skipped[name]}")
        parameter = self.template.get("Parameters", {}).get(name)
        if parameter is not None and "Default" in parameter:
            return str(parameter["Default"])
        raise TemplateError(f"Ref to {name!r}, which is neither created nor a parameter")

    def get_att(self, name: str, attribute: str) -> str:
        resource = self.deployment.resources.get(name)
        if resource is None or attribute not in resource.attributes:
            raise TemplateError(f"Fn::GetAtt {name}.{attribute} is not known locally")
        return resource.attributes[attribute]

    def sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match[1]
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and name.split(".", 1)[0] in self.deployment.resources:
                logical, attribute = name.split(".", 1)
                return self.get_att(logical, attribute)
            return self.ref(name)

        return _SUB.sub(one, text).replace("${!", "${")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            function = self._functions.get(key)
            if function is not None:
                return function(arg)
            if key.startswith("Fn::"):
                raise TemplateError(f"{key} is not supported by the local world")
        return {k: self.resolve(v) for k, v in value.items()}

    @property
    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self.ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Sub": self._sub,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
        }

    def _get_att(self, arg: Any) -> str:
        name, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
        return self.get_att(name, attribute)

    def _join(self, arg: Any) -> str:
        delimiter, parts = arg
        return str(delimiter).join(str(p) for p in self.resolve(parts))

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else arg
        return self.sub(text, variables)

    def _select(self, arg: Any) -> Any:
        index, items = arg
        return self.resolve(items)[int(self.resolve(index))]

    def _split(self, arg: Any) -> list[str]:
        delimiter, text = arg
        return str(self.resolve(text)).split(delimiter)


def creation_order(resources: Mapping[str, Any]) -> Iterable[str]:
    """The logical ids of ``resources`` (the template's), each after the ones it needs."""
    graph = {
        lid: {
            dep
            for dep in [*_references(r.get("Properties", {})), *_depends_on(r)]
            if dep in resources
        }
        for lid, r in resources.items()
    }
    return TopologicalSorter(graph).static_order()


def _references(value: Any) -> Iterator[str]:
    """Logical ids a property value refers to (Ref, GetAtt, Sub)."""
    if isinstance(value, list):
        for v in value:
            yield from _references(v)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                yield arg
            elif key == "Fn::GetAtt":
                yield arg.split(".", 1)[0] if isinstance(arg, str) else arg[0]
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                yield from (m.split(".", 1)[0] for m in _SUB.findall(text))
                if not isinstance(arg, str):
                    yield from _references(arg[1])
            else:
                yield from _references(arg)


def _depends_on(resource: Mapping[str, Any]) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)
