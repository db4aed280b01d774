"""Health checks, one module each, all behind ``checks.base.Check``.

To add one: write a module with a ``Check`` subclass whose ``run`` returns ``Result``
lines with a reason from the contract's table, and have the module ``register`` the
check's name, its builder and its options (see ``registry``); then import it below. The
command line, ``--checks`` and ``agent.main.build_checks`` take it from the registry, and
a unit test fails for a module here that registers nothing.
"""

# isort: off
# Registration order is the order of --checks' default and of the result lines.
from agent.checks import nvidia, neuron, efa, neuron_monitor  # noqa: F401

# isort: on
from agent.checks.registry import names, options, registered

__all__ = ["names", "options", "registered"]
