"""Health verdicts shared by the agent's checks and ``nodemedic triage``.

Plain Python, no AWS and no subprocess: the agent runs a tool and hands its output here,
triage hands a dump an engineer copied off a node. Both get the same ``Result`` lines, and
the catalog's health rules (``rules/health.yaml``) turn them into the same faults.
"""
