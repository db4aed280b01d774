"""The release this code is, reported wherever an operator asks what runs: the stack's
output, the agent's ``--version``, its metrics and its heartbeat line.

One home for the number: pyproject.toml reads it from here, and a unit test holds it to
CHANGELOG.md's newest released section, so a release is cut by changing both together
(docs/releasing.md).
"""

from __future__ import annotations

from typing import Final

VERSION: Final = "0.2.0"
