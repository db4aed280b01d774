"""A handler whose module takes ``IMPORT_SECONDS`` to import, as one that imports boto3 and
Powertools does on a busy machine: the Lambda worker processes' tests show that a worker's
start is not timed against the function's timeout (``tests/unit/world/aws/
test_lambdaworkers.py``)."""

from __future__ import annotations

import os
import time
from typing import Any

time.sleep(float(os.environ.get("IMPORT_SECONDS", "0")))


def ready(event: dict[str, Any], context: Any) -> int:
    return os.getpid()
