"""The state machines beside the remediation, built together by ``aftercare``: each started
by an EventBridge rule, each on the remediation's ledger.

- ``cleanup``: the failure phase for a remediation execution that timed out, was stopped, or
  failed on an error no catch routes.
- ``reconcile`` (scheduled): the nodes nodemedic took out with no live remediation, the
  silent ones, and the deep checks ``overdue``.
- ``requests`` (every minute): the manual decisions the node health label asks for.
"""
