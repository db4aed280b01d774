"""The Kubernetes Lambda: node lookup, marking, draining and clearing on the cluster API."""

REMEDIATOR_GROUP = "nodemedic:remediator"
"""The Kubernetes group the kube Lambda acts as: bound by rbac.yaml, mapped to the Lambda's
role by the EKS access entry, and given to the local world's remediator user."""
