"""The reference environment the Kubernetes manifest tests render."""

from __future__ import annotations

import pytest

from hubspoke.config.schema import HubSpokeConfig


def image(region: str) -> str:
    """An image as `hubspoke image build` records it: the Region's repository, pinned by digest."""
    return f"123456789012.dkr.ecr.{region}.amazonaws.com/hubspoke-dev-training@sha256:{'ab' * 32}"


@pytest.fixture
def dev_config() -> HubSpokeConfig:
    return HubSpokeConfig.model_validate(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {
                "region": "us-east-2",
                "cidr": "10.10.0.0/16",
                "compute": {"training_image": image("us-east-2")},
            },
            "spokes": [
                {
                    "region": "us-west-2",
                    "cidr": "10.20.0.0/16",
                    "compute": {"training_image": image("us-west-2")},
                }
            ],
            # config/dev.yaml's pin: a training job always names the version it reads.
            "dataset": {"name": "c4-llama3", "version": "v1"},
        }
    )
