"""Every name that crosses a process boundary, defined once, one module per concern.

The agent writes log streams the classifier parses (``logs``) and names its health checks in
the lines the catalog's health rules match (``health``), the stacks set environment
variables the handlers read (``env``), the state machine writes ledger keys the CLI and the
local world read (``ledger``), metrics are published by one part and alarmed on by another
(``metrics``), the stack's names and outputs are read by the console (``stack``), the kube
Lambda puts labels and taints on Nodes that operators and HyperPod-style tooling read
(``kube``), and the job monitor reads what training jobs declare (``jobs``). A name spelled
twice drifts; each one lives in one of these modules and is imported from there.
docs/contracts.md describes the shapes behind the names.
"""
