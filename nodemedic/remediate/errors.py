"""The one error the remediation domain raises."""


class PolicyError(ValueError):
    """A decision or setting the policy cannot act on; the message says which field."""
