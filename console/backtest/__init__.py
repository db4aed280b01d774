"""``nodemedic backtest``: the whole pipeline replayed on history, in simulated time.

``read`` turns log files and CloudWatch Logs events into each node's timed lines,
``machine`` is the remediation state machine's rules on an in-memory ledger, ``replay``
drives the classifier's batches and the remediations by the lines' own timestamps,
``report`` and ``html`` say what nodemedic would have done (docs/backtest.md).
"""
