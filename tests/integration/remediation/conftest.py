"""Shared pieces of the remediation tests.

The state machine under test is the one ``cdk synth`` produces: the whole PipelineStack
of ``stacks.synth.synth_template``, deployed into moto by ``nodemedic.local.aws.deploy``.
Three clusters' stacks, one per recovery setting, can share one moto world: ``demo``
acts, ``watch`` only monitors (recovery mode None), ``dry`` is a dry run. Their settings
are also the ones the definition tests read, so the suite synthesizes three stacks.

Kubernetes is one real kube-apiserver per session with simulated kubelets
(``tests.support.kube_fixtures``); each test makes its own node group, so tests share nothing but
the control plane."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodemedic.local.aws import QUICK_EC2
from stacks.synth import synth_template
from tests.support.remediation import ACTING


@pytest.fixture(scope="session", autouse=True)
def quick_ec2() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in QUICK_EC2.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def default_template() -> dict[str, Any]:
    return synth_template(ACTING)
