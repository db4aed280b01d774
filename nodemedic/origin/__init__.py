"""Proof of origin: that a kernel or health line acted on came from the instance whose
stream holds it.

Every agent shares one CloudWatch Logs credential that may write every stream of the
cluster's log group, so the stream name says which node a line is *about*, not who wrote
it. Each agent therefore signs every event with a per-boot key (``signing``) that it
registered together with its EC2 instance identity document and AWS's signature over it
(``identity``); the classifier acts only on lines whose signature checks out against the
key registered for that very instance. docs/security.md holds the threat model.
"""
