"""The policy Lambda: the remediation arithmetic States Language cannot do."""
