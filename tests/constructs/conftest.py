"""Fixtures for the constructs' runtime tests."""

from __future__ import annotations

import pytest

from tests.lambda_runtime import require_sandbox


@pytest.fixture(scope="session")
def lambda_sandbox() -> str:
    """The Lambda sandbox mode ("root" or "userns"); skips, saying why, where this machine has none."""
    return require_sandbox()
