"""Step Functions in moto: parse a state machine's definition once, as the service does.

moto's interpreter parses the definition with ANTLR at every ``StartExecution``: about
0.7 s for nodemedic's 45 kB definition on one core, between the call and the first state,
a delay the service does not have (it parses at ``CreateStateMachine``). While
``definitions_parsed_once`` is active (``motopatch.definition_parsing``) the syntax tree of
each definition text is kept; every execution still gets evaluation components of its own,
built from that tree.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from world.aws import motopatch

_trees: dict[str, Any] = {}
_lock = threading.Lock()


def _parse(moto_parse: motopatch.Parse, definition: str) -> tuple[Any, Any]:
    with _lock:
        tree = _trees.get(definition)
    if tree is None:
        # The first parse of a text checks its syntax and raises as moto does.
        program, tree = moto_parse(definition)
        with _lock:
            _trees[definition] = tree
        return program, tree
    return Preprocessor().visit(tree), tree


@contextlib.contextmanager
def definitions_parsed_once() -> Iterator[None]:
    with motopatch.definition_parsing(_parse):
        try:
            yield
        finally:
            with _lock:
                _trees.clear()
