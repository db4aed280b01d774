"""``python -m console.cli``: the same command line as ``nodemedic``."""

import sys

from console.cli import main

sys.exit(main())
