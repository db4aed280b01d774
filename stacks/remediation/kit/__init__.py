"""What every state machine of the remediation builds with: the ``Flow`` (``flow``: the
resources, the settings, the guarded tasks and the catch-all), the execution state's paths
(``state``), the ledger's rules as task parameters (``render``) and as transactions
(``transact``), metrics and mail (``signals``), and the state machine itself with its
execution logs and tracing (``machine``)."""
