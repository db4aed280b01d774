"""Kubernetes for the local world: the real control plane (built by build-kube.sh),
simulated kubelets and their device sockets, the chart, the workloads."""
