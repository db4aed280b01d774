"""Links into the CloudWatch console for what the page does not draw: a Logs Insights
widget becomes its query, ready to run, in the console of the dashboard's Region.

The console keeps the query in the URL fragment as JSURL (``~(key~value…)``, strings
``'text`` with every character but letters, digits, ``-``, ``_`` and ``.`` escaped as
``*hh``), after ``$3FqueryDetail$3D`` (``?queryDetail=`` with ``$`` for ``%``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_PLAIN = re.compile(r"[^\w\-.]")
_SOURCE = re.compile(r"^\s*SOURCE\s+((?:'[^']*'\s*,?\s*)+)\|\s*", re.IGNORECASE)
LOGS_INSIGHTS_SECONDS = 86400
"""How far back the linked query looks: the dashboard's own day."""


def _jsurl_string(text: str) -> str:
    def escaped(found: re.Match[str]) -> str:
        char = found.group(0)
        if char == "$":
            return "!"
        code = ord(char)
        return f"*{code:02x}" if code < 0x100 else f"**{code:04x}"

    return "'" + _PLAIN.sub(escaped, text)


def log_sources(query: str) -> tuple[tuple[str, ...], str]:
    """A log widget's query (``SOURCE 'group' | fields …``, as CloudWatch stores it) as
    its log groups and the query that runs on them."""
    found = _SOURCE.match(query)
    if found is None:
        return (), query
    return tuple(re.findall(r"'([^']*)'", found.group(1))), query[found.end() :]


def logs_insights_url(region: str, query: str, groups: Sequence[str]) -> str:
    """The console's Logs Insights page with ``query`` on ``groups`` over the last day."""
    sources = "".join(f"~{_jsurl_string(group)}" for group in groups)
    detail = (
        f"~(end~0~start~-{LOGS_INSIGHTS_SECONDS}~timeType~'RELATIVE~unit~'seconds"
        f"~editorString~{_jsurl_string(query)}~source~(~{sources[1:] if sources else ''}))"
    )
    # JSURL leaves only characters a URL fragment keeps as they are; the console spells
    # the ``?`` and ``=`` of its own query as ``$3F`` and ``$3D``.
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#logsV2:logs-insights$3FqueryDetail$3D{detail}"
    )
