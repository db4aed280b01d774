"""The CloudWatch Logs subscription filter pattern, generated from the catalog.

Only lines that can be a fault should invoke the classifier: a healthy fleet writes
millions of kernel lines a day. The pattern is an OR of quoted terms (``?"a" ?"b"``), one
per distinct rule pattern: the literal every match of that pattern must contain, so the
filter never drops a line a rule would have matched. One more term selects every line the
agent writes of its own (``AGENT_LINE_PREFIX``): its heartbeats reach the classifier, and
the rules on its notes need no terms of their own.
"""

from __future__ import annotations

import re

from nodemedic.catalog import Catalog, CatalogError
from nodemedic.contracts import AGENT_LINE_PREFIX
from nodemedic.detect.classifier import required_literal

MAX_PATTERN_LENGTH = 1024
"""PutSubscriptionFilter's limit on ``filterPattern``."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_STATUS_WORDS = {"ok", "warn", "fail", "skipped"}


def _term(rule_id: str, needle: str | None, source: str) -> str:
    if needle is None:
        raise CatalogError(
            f"rule {rule_id}: its pattern has no literal of 3+ characters outside groups and "
            "repeats, so no subscription filter term can select its lines; add one"
        )
    if source == "health":
        # Health lines arrive as JSON, not as the canonical text rules match; the reason
        # word appears verbatim in both.
        words = [w for w in _WORD.findall(needle) if w not in _STATUS_WORDS]
        if not words:
            raise CatalogError(f"rule {rule_id}: a health pattern must name its reason literally")
        return str(max(words, key=len))
    return max(needle.split('"'), key=len).strip()


def filter_terms(catalog: Catalog) -> list[str]:
    """The minimal set of terms: a term that contains another term adds nothing."""
    terms: dict[str, None] = {AGENT_LINE_PREFIX: None}
    for rule in catalog.rules:
        if rule.action != "ignore":
            terms.setdefault(_term(rule.id, required_literal(rule.pattern), rule.source))
    return [t for t in terms if not any(o != t and o in t for o in terms)]


def subscription_filter_pattern(catalog: Catalog) -> str:
    pattern = " ".join(f'?"{term}"' for term in filter_terms(catalog))
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise CatalogError(
            f"the generated filter pattern is {len(pattern)} characters, over CloudWatch's "
            f"{MAX_PATTERN_LENGTH}; give rules shared literals"
        )
    return pattern


def term_matches(pattern: str, message: str) -> bool:
    """How CloudWatch applies an OR-of-quoted-terms pattern, for tests and the local mode
    (moto delivers every event regardless of the pattern)."""
    return any(term in message for term in re.findall(r'\?"([^"]*)"', pattern))
