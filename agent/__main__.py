"""``python -m agent [agent flags]`` or ``python -m agent inject ...``: the same commands as
``nodemedic agent`` / ``nodemedic inject``, without the CLI package (the node image)."""

from __future__ import annotations

import argparse
import sys

from agent.cli import configure_agent, run_agent
from agent.injectcli import configure_inject, run_inject


def main(argv: list[str]) -> int:
    if argv[:1] == ["inject"]:
        parser = argparse.ArgumentParser(prog="python -m agent inject")
        configure_inject(parser)
        return run_inject(parser.parse_args(argv[1:]))
    parser = argparse.ArgumentParser(prog="python -m agent")
    configure_agent(parser)
    return run_agent(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
