"""The CloudWatch Logs subscription filter patterns, generated from the catalog.

Only lines that can be a fault should invoke the classifier: a healthy fleet writes
millions of kernel lines a day. A pattern is an OR of quoted terms (``?"a" ?"b"``), one
per distinct rule pattern: the literal every match of that pattern must contain, so the
filters never drop a line a rule would have matched.

One pattern holds 1,024 characters, and a log group takes two subscription filters: when
the terms outgrow one pattern they are split over two, each its own filter to the same
classifier. That costs nothing on the node and no Logs charge of its own; a line that
holds terms of both patterns is delivered twice, and the classifier's idempotency keeps
it one decision. While the terms fit in one pattern only one filter is made, which leaves
the log group's second filter free for the user.

One more term selects every line the agent writes of its own (``AGENT_LINE_PREFIX``): its
heartbeats reach the classifier, and the rules on its notes need no terms of their own.

The ``hyperpod`` rules add no term: they read SageMaker HyperPod's log groups, not the
nodes' group, and match a canonical text their events do not hold verbatim. A HyperPod
group's filter is ``HYPERPOD_FILTER_PATTERN``.
"""

from __future__ import annotations

import re

from nodemedic.catalog import Catalog, CatalogError, Rule
from nodemedic.contracts.health import DEEP_CHECK_VERDICT, REASON_KEY
from nodemedic.contracts.logs import AGENT_LINE_PREFIX, DEEP_CHECK_SOURCE
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.matching import holds, required_literal

MAX_PATTERN_LENGTH = 1024
"""PutSubscriptionFilter's limit on ``filterPattern``."""
MAX_FILTERS = 2
"""CloudWatch Logs' limit on subscription filters per log group."""
HYPERPOD_FILTER_PATTERN = ""
"""The subscription filter of a listed HyperPod cluster's log group: every event. The group
is quiet (a detection per node condition that changes, a deep health check's results, a
node's lifecycle script output), and an event that does not parse must reach the classifier
to be counted, which a JSON pattern would never let through."""


def _term(rule_id: str, needle: str | None, source: str) -> str:
    if needle is None:
        raise CatalogError(
            f"rule {rule_id}: its pattern has no literal of 3+ characters outside groups and "
            "repeats, so no subscription filter term can select its lines; add one"
        )
    if source == DEEP_CHECK_SOURCE:
        # Every verdict line names its check, and no other line of the stream does.
        return DEEP_CHECK_VERDICT
    if source == "health":
        # Health lines arrive as JSON, not as the canonical text rules match, and every one
        # holds the reason's key: one term for them all, where a word of each rule's reason
        # took a term each (the healthy results it also selects are a line per check and
        # device an interval, which the classifier drops).
        return REASON_KEY
    return max(needle.split('"'), key=len).strip()


def _chosen(rule: Rule) -> str:
    """The rule's own ``term``, once it is shown to be part of every match."""
    if not holds(rule.pattern, rule.term):
        raise CatalogError(
            f"rule {rule.id}: its term {rule.term!r} is not a literal every match of its "
            "pattern holds (outside groups and repeats), so the filter would drop its lines"
        )
    return rule.term


def filter_terms(catalog: Catalog) -> list[str]:
    """The minimal set of terms: a term that contains another term adds nothing."""
    terms: dict[str, None] = {AGENT_LINE_PREFIX: None}
    for rule in catalog.rules:
        if rule.action != "ignore" and rule.source != HYPERPOD_SOURCE:
            term = (
                _chosen(rule)
                if rule.term
                else _term(rule.id, required_literal(rule.pattern), rule.source)
            )
            terms.setdefault(term)
    return [t for t in terms if not any(o != t and o in t for o in terms)]


def subscription_filter_patterns(catalog: Catalog) -> list[str]:
    """The fewest patterns (at most :data:`MAX_FILTERS`) that hold every term, filled in
    catalog order so a rule's term keeps its place while rules are added after it."""
    patterns: list[str] = []
    for term in filter_terms(catalog):
        quoted = f'?"{term}"'
        if patterns and len(patterns[-1]) + 1 + len(quoted) <= MAX_PATTERN_LENGTH:
            patterns[-1] += " " + quoted
        else:
            patterns.append(quoted)
    if len(patterns) > MAX_FILTERS:
        total = sum(len(p) for p in patterns)
        raise CatalogError(
            f"the generated filter terms take {total} characters, over the "
            f"{MAX_FILTERS} x {MAX_PATTERN_LENGTH} of CloudWatch's subscription filters; "
            "give rules shared literals"
        )
    return patterns


def term_matches(pattern: str, message: str) -> bool:
    """How CloudWatch applies an OR-of-quoted-terms pattern, for tests and the local mode
    (moto delivers every event regardless of the pattern)."""
    return any(term in message for term in re.findall(r'\?"([^"]*)"', pattern))


def selected(patterns: list[str], message: str) -> bool:
    """Whether any of the log group's filters delivers ``message`` to the classifier."""
    return any(term_matches(pattern, message) for pattern in patterns)
