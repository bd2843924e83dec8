"""The provisioner's tag keys come from its environment; without one it refuses, naming where it comes from."""

from __future__ import annotations

import pytest

from hubspoke.constructs.cnq.runtime import contract


def test_a_function_without_its_environment_refuses_rather_than_guess_a_tag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HUBSPOKE_CNQ_CLUSTER_TAG")
    with pytest.raises(
        RuntimeError, match=r"HUBSPOKE_CNQ_CLUSTER_TAG is not set.*constructs/cnq/provisioning\.py"
    ):
        contract.cluster_tag()
    monkeypatch.setenv("HUBSPOKE_CNQ_CLUSTER_TAG", "hubspoke:cnq-cluster")
    assert contract.cluster_tag() == "hubspoke:cnq-cluster"
