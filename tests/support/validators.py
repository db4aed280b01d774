"""AWS's own rules, checked before deploy: moto enforces no IAM and accepts any template and
any state machine definition, so three real validators read what would be deployed.

- parliament (duo-labs) on every IAM policy document: the synthesized roles' inline and
  trust policies, the managed and attached policies, the key, topic and queue policies,
  with their intrinsics resolved to ARNs of each resource type's shape
  (``tests.support.intrinsics``), and the agent policy the repository ships;
- cfn-lint (AWS) on every synthesized template;
- asl-validator (npm) on every state machine definition, all in one node process.

A finding is fixed, or listed in ``IGNORED`` with the reason it is not one; docs/security.md
("Checked before deploy") repeats the list.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.intrinsics import ACCOUNT, REGION, Template, resolve
from tests.support.paths import ROOT

AGENT_POLICY = ROOT / "agent" / "deploy" / "iam-policy.json"
AGENT_POLICY_VALUES = {"REGION": REGION, "ACCOUNT_ID": ACCOUNT, "CLUSTER_NAME": "demo"}
"""The shipped policy's placeholders, each given a value AWS would accept."""

IDENTITY = "identity policy"
TRUST = "trust policy"
KEY = "key policy"
RESOURCE = "resource policy"
STATE_MACHINE = "AWS::StepFunctions::StateMachine"

Document = dict[str, Any]
Properties = dict[str, Any]
POLICIES: dict[str, Callable[[Properties], Iterator[tuple[str, Any]]]] = {
    "AWS::IAM::Role": lambda p: iter(
        [(TRUST, p["AssumeRolePolicyDocument"])]
        + [(IDENTITY, inline["PolicyDocument"]) for inline in p.get("Policies", [])]
    ),
    "AWS::IAM::Policy": lambda p: iter([(IDENTITY, p["PolicyDocument"])]),
    "AWS::IAM::ManagedPolicy": lambda p: iter([(IDENTITY, p["PolicyDocument"])]),
    "AWS::KMS::Key": lambda p: iter([(KEY, p["KeyPolicy"])]),
    "AWS::SNS::TopicPolicy": lambda p: iter([(RESOURCE, p["PolicyDocument"])]),
    "AWS::SQS::QueuePolicy": lambda p: iter([(RESOURCE, p["PolicyDocument"])]),
}
"""Where each resource type keeps its policy documents, and what kind each is."""


@dataclass(frozen=True)
class Finding:
    validator: str
    check: str
    """parliament's issue, cfn-lint's rule id, asl-validator's error code."""
    kind: str
    """What was checked: a policy's kind, or the resource type the finding is in."""
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.validator} {self.check} in {self.kind} {self.where}: {self.detail}"


@dataclass(frozen=True)
class Ignored:
    validator: str
    check: str
    kind: str
    detail: str
    """Text the finding's detail holds ("" for any)."""
    reason: str

    def covers(self, finding: Finding) -> bool:
        return (finding.validator, finding.check, finding.kind) == (
            self.validator,
            self.check,
            self.kind,
        ) and self.detail in finding.detail


IGNORED: tuple[Ignored, ...] = (
    Ignored(
        "parliament",
        "MALFORMED",
        TRUST,
        "Statement contains neither Resource nor NotResource",
        "A role's trust policy has no Resource element: the role it is attached to is the "
        "resource (IAM's grammar for trust policies); parliament reads every document as an "
        "identity policy.",
    ),
    Ignored(
        "parliament",
        "RESOURCE_STAR",
        KEY,
        "",
        'In a key policy, "Resource": "*" means the key the policy is attached to and no '
        "other (AWS KMS key policies); parliament reads it as every resource.",
    ),
    *(
        Ignored(
            "parliament",
            "UNKNOWN_ACTION",
            IDENTITY,
            f"Unknown action sagemaker:{action}",
            f"SageMaker's {action} (HyperPod) is in botocore's service model and AWS's API "
            f"reference (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_{action}"
            ".html); parliament's action list predates it.",
        )
        for action in ("batchRebootClusterNodes", "batchReplaceClusterNodes")
    ),
    *(
        Ignored(
            "cfn-lint",
            "W3005",
            type_,
            "dependency already enforced by a 'GetAtt'",
            "aws-cdk-lib writes DependsOn on a function's or state machine's role beside its "
            "default policy, so CloudFormation creates the policy first; the role half repeats "
            "the GetAtt on the role and changes nothing in the order of creation.",
        )
        for type_ in ("AWS::Lambda::Function", STATE_MACHINE)
    ),
)
"""Every finding a validator reports that is not a mistake, with the reason."""


def unexplained(findings: Iterable[Finding]) -> list[str]:
    """The findings no entry of ``IGNORED`` covers, as text."""
    return [str(f) for f in findings if not any(i.covers(f) for i in IGNORED)]


def unused(findings: Iterable[Finding], validator: str) -> list[Ignored]:
    """The entries of ``IGNORED`` for ``validator`` that cover none of ``findings``: each
    must still be needed."""
    found = list(findings)
    return [i for i in IGNORED if i.validator == validator and not any(i.covers(f) for f in found)]


# parliament


def policy_documents(template: Template) -> Iterator[tuple[str, str, Document]]:
    """(kind, logical id, document with its intrinsics resolved) for every policy document
    of the template."""
    for logical_id, resource in template["Resources"].items():
        documents = POLICIES.get(resource["Type"])
        if documents is None:
            continue
        for kind, document in documents(resource.get("Properties", {})):
            yield kind, logical_id, resolve(template, document)


def unread_policy_types(template: Template) -> set[str]:
    """The resource types that hold a policy document ``POLICIES`` does not say how to read."""
    return {
        r["Type"]
        for r in template["Resources"].values()
        if r["Type"] not in POLICIES
        and any(
            name.endswith(("PolicyDocument", "KeyPolicy")) or name == "Policies"
            for name in r.get("Properties", {})
        )
    }


def parliament_findings(document: Document, kind: str, where: str) -> list[Finding]:
    import parliament

    policy = parliament.analyze_policy_string(json.dumps(document))
    return [
        Finding("parliament", str(f.issue), kind, where, str(f.detail)) for f in policy.findings
    ]


def template_policy_findings(template: Template) -> list[Finding]:
    return [
        finding
        for kind, logical_id, document in policy_documents(template)
        for finding in parliament_findings(document, kind, logical_id)
    ]


def shipped_agent_policy(text: str | None = None) -> Document:
    """agent/deploy/iam-policy.json (or ``text`` in its place) with its placeholders filled."""
    text = AGENT_POLICY.read_text(encoding="utf-8") if text is None else text
    for placeholder, value in AGENT_POLICY_VALUES.items():
        text = text.replace(placeholder, value)
    document: Document = json.loads(text)
    return document


# cfn-lint


def cfn_lint_findings(template: Template) -> list[Finding]:
    """cfn-lint's errors and warnings (its default checks) for ``REGION``."""
    from cfnlint.api import lint

    findings = []
    for match in lint(json.dumps(template), regions=[REGION]):
        path = [str(p) for p in match.path]
        logical_id = path[1] if len(path) > 1 and path[0] == "Resources" else ""
        resource = template.get("Resources", {}).get(logical_id, {})
        findings.append(
            Finding(
                "cfn-lint",
                str(match.rule.id),
                str(resource.get("Type", path[0] if path else "template")),
                "/".join(path),
                str(match.message),
            )
        )
    return findings


# asl-validator

ASL_SCRIPT = """
const validator = require("asl-validator");
const definitions = JSON.parse(require("fs").readFileSync(0, "utf8"));
const found = {};
for (const [name, definition] of Object.entries(definitions)) {
  found[name] = validator(definition).errors.map((e) => [e["Error code"], e.Message]);
}
process.stdout.write(JSON.stringify(found));
"""
"""Every definition through the validator's default checks (paths and ARNs included), in
one node process; prints {name: [[error code, message]]}."""


def state_machine_definitions(template: Template) -> dict[str, Document]:
    """Each state machine's definition, by logical id, with its intrinsics resolved to
    placeholder ARNs."""
    definitions = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != STATE_MACHINE:
            continue
        properties = resource["Properties"]
        text = (
            str(resolve(template, properties["DefinitionString"]))
            if "DefinitionString" in properties
            else json.dumps(resolve(template, properties["Definition"]))
        )
        for name, value in resolve(template, properties.get("DefinitionSubstitutions", {})).items():
            text = text.replace("${" + name + "}", str(value))
        definitions[logical_id] = json.loads(text)
    return definitions


def asl_findings(definitions: dict[str, Document]) -> list[Finding]:
    """asl-validator's errors for each of ``definitions`` (by name)."""
    node = shutil.which("node")
    assert node, "asl-validator needs node on PATH"
    assert (ROOT / "node_modules" / "asl-validator").is_dir(), (
        "asl-validator is not installed: run `npm ci` (make test does)"
    )
    run = subprocess.run(
        [node, "-e", ASL_SCRIPT],
        cwd=ROOT,
        input=json.dumps(definitions),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    found: dict[str, list[list[str]]] = json.loads(run.stdout)
    assert set(found) == set(definitions)
    return [
        Finding("asl-validator", code, STATE_MACHINE, name, message)
        for name, errors in found.items()
        for code, message in errors
    ]
