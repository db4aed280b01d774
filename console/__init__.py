"""The console: the ``nodemedic`` command line, the backtest and the dashboard page.

It stands on top of every other package (the domain, the agent, the Lambdas, the stacks)
and nothing below imports it.
"""
