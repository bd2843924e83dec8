"""The reference environment the Kubernetes manifest tests render."""

from __future__ import annotations

import pytest

from hubspoke.config.schema import HubSpokeConfig


@pytest.fixture
def dev_config() -> HubSpokeConfig:
    return HubSpokeConfig.model_validate(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
            "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
            # config/dev.yaml's pin: a training job always names the version it reads.
            "dataset": {"name": "c4-llama3", "version": "v1"},
        }
    )
