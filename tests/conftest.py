"""Fixtures every tier may ask for: the session's real kube-apiserver and its simulated
kubelets (started only by a test that asks for them)."""

pytest_plugins = ["tests.support.kube_fixtures"]
