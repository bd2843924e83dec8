"""Topology shapes beyond config/dev.yaml, for invariants that must hold for every environment, not one.

Each shape is a valid config (tests/test_shapes.py keeps it that way, and checks that together with
config/dev.yaml they cover what issue 11 lists): several spokes; a spoke in another account; secondary
CIDRs on the hub and on spokes (same and other account); each NAT mode (single in dev, per_az, none); a
Region with storage but no compute, and Regions with neither. The reverse of storage-without-compute,
compute without storage, is refused by validation (compute mounts the Region's own CNQ), so no shape has it.
The `shape` fixture (tests/conftest.py) synthesizes each once per session.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import NETWORK_ONLY, with_pins

# Storage pins (image, Qumulo Core release) filled in wherever storage is on, as every valid config needs.
SHAPES: dict[str, dict[str, Any]] = {
    # Three spokes, secondary CIDRs on the hub and one spoke, NAT per AZ on one, the hub without compute.
    "multi-spoke": {
        "environment": "multi",
        "account": "123456789012",
        "hub": {
            "region": "us-east-2",
            "cidr": "10.10.0.0/16",
            "secondary_cidrs": ["10.11.0.0/16"],
            "compute": {"enabled": False},
        },
        "spokes": [
            {"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["10.21.0.0/20"]},
            {"region": "eu-west-1", "cidr": "10.30.0.0/16", "nat": "per_az", "compute": {"enabled": False}},
            {"region": "ap-northeast-1", "cidr": "10.40.0.0/20", **NETWORK_ONLY},
        ],
    },
    # A spoke in another account with a secondary CIDR (network only: portals stay in one account), and one
    # without NAT.
    "cross-account": {
        "environment": "xacct",
        "account": "123456789012",
        "hub": {"region": "us-east-1", "cidr": "10.50.0.0/16"},
        # The hub's Shift-From user and the load Job's role (docs/datasets.md) exist only with source buckets,
        # which need hub compute (config/dataset_rules.py): one shape has two.
        "dataset": {"name": "c4-llama3", "version": "v1", "source_buckets": ["c4-tokenized", "c4.other-region"]},
        "spokes": [
            {"region": "us-west-2", "cidr": "10.60.0.0/16", "secondary_cidrs": ["10.61.0.0/24"],
             "account": "210987654321", **NETWORK_ONLY},
            {"region": "eu-central-1", "cidr": "10.70.0.0/16", "nat": "none", **NETWORK_ONLY},
        ],
    },
}  # fmt: skip
SHAPES = {name: with_pins(data) for name, data in SHAPES.items()}
