"""Fixtures for the constructs' runtime tests."""

from __future__ import annotations

import pytest

from hubspoke.constructs.cnq.provisioning import RUNTIME_ENVIRONMENT
from tests.lambda_runtime import require_sandbox


@pytest.fixture(scope="session")
def lambda_sandbox() -> str:
    """The Lambda sandbox mode ("root" or "userns"); skips, saying why, where this machine has none."""
    return require_sandbox()


@pytest.fixture(autouse=True)
def cnq_provisioner_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CNQ provisioner's environment as its construct states it (provisioning.RUNTIME_ENVIRONMENT), which the
    synthesized template carries (cnq/test_cnq_template.py checks it against the tag keys written out), for the
    runtime tests that call its handlers in this process (the CNQ world, the canary's real readers)."""
    for name, value in RUNTIME_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
