"""Remediation rules as plain Python: decision records, the policy, the ledger."""
