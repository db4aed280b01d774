"""The CDK app's constructs and stacks.

Importing the package points jsii at the project's own Node.js LTS
(``node_modules/.bin/node``, pinned in package.json and installed by ``npm ci``) unless
``JSII_NODE`` already names one: the machine's ``node`` may be a line jsii calls
end-of-life, and jsii then prints its banner on every synth. ``npx cdk`` puts the same
binary first on the PATH for ``app.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_NODE = Path(__file__).resolve().parent.parent / "node_modules" / ".bin" / "node"
if PROJECT_NODE.exists():
    os.environ.setdefault("JSII_NODE", str(PROJECT_NODE))
