"""Health checks, one module each, all behind ``checks.base.Check``.

To add one: write a module with a ``Check`` subclass whose ``run`` returns ``Result``
lines with a reason from the contract's table, define the module's ``REGISTRATION`` (the
name ``--checks`` takes, the line name it writes, its builder and its options; see
``registry``), and add it to ``CHECKS`` in ``all``, whose order is the order of
``--checks``' default and of the result lines. The command line, ``--checks`` and
``agent.main.build_checks`` take it from there, and a unit test fails for a check module
missing from the list.
"""

from agent.checks.all import names, options, registered

__all__ = ["names", "options", "registered"]
