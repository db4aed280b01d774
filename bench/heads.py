"""The heads grammar's cost per line, on one core: what reading a log adds to classifying it.

Triage, backtest and the agent's file reader take every line through
``logformat.message_of`` (``nodemedic.detect.heads``) before the classifier sees it, so
its rate bounds theirs. Two corpora of the same real lines (tests/events, one in ten a
fault): bare, as the agent ships them, and each behind a head of one of the grammar's
forms in turn. Every line must come out as the message its bare line gives before a number
is printed.

    python -m bench.heads [--lines N]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bench.classifier import corpus
from bench.timing import best_rate
from nodemedic.detect.headforms import FORMS
from nodemedic.detect.logformat import message_of


def _read(lines: Sequence[str]) -> None:
    for line in lines:
        message_of(line)


def _text(line: str) -> str | None:
    parsed = message_of(line)
    return None if parsed is None else parsed.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    # The corpus's lines as messages: some of tests/events carry a head of their own.
    bare = [_text(line) or line for line in corpus(args.lines, 0.1)]
    headed = [FORMS[n % len(FORMS)].head + line for n, line in enumerate(bare)]
    wrong = [line for line, want in zip(headed, bare, strict=True) if _text(line) != _text(want)]
    if wrong:
        raise SystemExit(f"{len(wrong)} lines not read as their bare message: {wrong[:3]}")
    print(f"corpus: {len(bare)} lines, {len(FORMS)} head forms")
    bare_rate = best_rate(lambda: _read(bare), len(bare))
    headed_rate = best_rate(lambda: _read(headed), len(headed))
    print(f"baseline, bare messages: {bare_rate:>10,.0f} lines/s")
    print(
        f"each behind a head:      {headed_rate:>10,.0f} lines/s ({headed_rate / bare_rate:.2f}x)"
    )


if __name__ == "__main__":
    main()
