"""Snapshots of every template config/dev.yaml and each topology shape (tests/shapes.py) produce, asset hashes
masked: a diff here means infrastructure changed.

Review a snapshot diff like a plan; accept it with `pytest tests/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from tests.conftest import Templates, load_shape
from tests.shapes import SHAPES

_HASH = re.compile(r"[0-9a-f]{64}")


def mask(value: Any) -> Any:
    """Asset hashes change with any byte of bundled code; the infrastructure does not."""
    if isinstance(value, dict):
        return {k: mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, str):
        return _HASH.sub("<asset-hash>", value)
    return value


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_mask_hides_only_hashes() -> None:
    digest = "a" * 64
    assert mask({"S3Key": f"{digest}.zip", "n": [1, "x"]}) == {"S3Key": "<asset-hash>.zip", "n": [1, "x"]}


def test_dev_templates(dev_templates: Templates, snapshot_json: SnapshotAssertion) -> None:
    for stack_id in sorted(dev_templates):
        assert mask(dev_templates[stack_id]) == snapshot_json(name=stack_id)


@pytest.mark.thorough
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_templates(
    name: str, tmp_path_factory: pytest.TempPathFactory, snapshot_json: SnapshotAssertion
) -> None:
    """Peer-access stacks, cross-account roles, secondary CIDRs and NAT modes show up only in these."""
    templates = load_shape(name, tmp_path_factory).templates
    for stack_id in sorted(templates):
        assert mask(templates[stack_id]) == snapshot_json(name=stack_id)
