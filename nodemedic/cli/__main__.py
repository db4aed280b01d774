"""``python -m nodemedic.cli``: the same command line as ``nodemedic``."""

import sys

from nodemedic.cli import main

sys.exit(main())
