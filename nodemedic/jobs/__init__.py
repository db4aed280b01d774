"""Job log monitoring in SageMaker HyperPod's schema (``logMonitoringConfiguration`` and
``runPolicy``), for any Kubernetes job whose logs reach CloudWatch Logs.

Plain Python, no AWS import: ``rules`` parses and validates a job's rules, ``evaluate``
turns log lines and the passing of time into verdicts with explicit state, ``restart``
turns verdicts into restarts per the job's restart policy, ``records`` reads Container
Insights' log records. docs/jobs.md gives the semantics and their sources.
"""
