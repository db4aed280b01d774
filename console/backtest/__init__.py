"""``nodemedic backtest``: the whole pipeline replayed on history, in simulated time.

``read`` turns log lines and CloudWatch Logs events into each node's timed lines (``stamps``:
the wall clock of each line, by its node's boot time where it counts since boot), ``files``
streams log files and folders as one timeline in time order, never held whole,
``machine`` is the remediation state machine's rules on an in-memory ledger, ``replay``
drives the classifier's batches and the remediations by the lines' own timestamps,
``report`` and ``html`` (with ``axis``'s ticks) say what nodemedic would have done
(docs/backtest.md).
"""
