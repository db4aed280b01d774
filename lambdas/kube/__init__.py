"""The Kubernetes Lambda: node lookup, marking, draining and clearing on the cluster API."""
