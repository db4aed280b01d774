"""Health checks, one module each, all behind ``checks.base.Check``.

To add one: write a module with a ``Check`` subclass whose ``run`` returns ``Result``
lines with a reason from the contract's table, and build it in ``agent.main.build_checks``.
"""
