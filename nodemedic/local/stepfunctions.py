"""Step Functions in moto: parse a state machine's definition once, as the service does.

moto's interpreter parses the definition with ANTLR at every ``StartExecution``: about
0.7 s for nodemedic's 45 kB definition on one core, between the call and the first state,
a delay the service does not have (it parses at ``CreateStateMachine``). While
``definitions_parsed_once`` is active the syntax tree of each definition text is kept;
every execution still gets evaluation components of its own, built from that tree.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

_trees: dict[str, Any] = {}
_lock = threading.Lock()


def _parse(definition: str) -> tuple[Any, Any]:
    with _lock:
        tree = _trees.get(definition)
    if tree is None:
        # The first parse of a text checks its syntax and raises as moto does.
        program, tree = _ORIGINAL.__func__(definition)
        with _lock:
            _trees[definition] = tree
        return program, tree
    return Preprocessor().visit(tree), tree


_ORIGINAL: Any = AmazonStateLanguageParser.__dict__["parse"]


@contextlib.contextmanager
def definitions_parsed_once() -> Iterator[None]:
    AmazonStateLanguageParser.parse = staticmethod(_parse)  # type: ignore[method-assign]
    try:
        yield
    finally:
        AmazonStateLanguageParser.parse = _ORIGINAL  # type: ignore[method-assign]
        with _lock:
            _trees.clear()
