"""Snapshots of every template config/dev.yaml and each topology shape (tests/shapes.py) produce, asset hashes
masked and the CDK CLI's bookkeeping left out: a diff here means infrastructure changed.

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


def infrastructure(template: dict[str, Any]) -> dict[str, Any]:
    """`template` without what the CDK CLI's context adds for its own bookkeeping (hubspoke.stage.CLI_CONTEXT):
    each resource's construct path and asset metadata (aws-cdk-lib core: "aws:cdk:path", cx-api
    "aws:asset:*" keys) and the version-reporting CDKMetadata resource. None of it deploys anything."""
    resources = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::CDK::Metadata":
            continue
        resource = dict(resource)
        if "Metadata" in resource:
            kept = {
                k: v
                for k, v in resource["Metadata"].items()
                if k != "aws:cdk:path" and not k.startswith("aws:asset:")
            }
            if kept:
                resource["Metadata"] = kept
            else:
                del resource["Metadata"]
        resources[logical_id] = resource
    return {**template, "Resources": resources}


def test_infrastructure_drops_only_the_clis_bookkeeping() -> None:
    template = {
        "Resources": {
            "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:deflate64:x"}},
            "Fn": {"Type": "AWS::Lambda::Function", "Metadata": {"aws:cdk:path": "S/Fn", "aws:asset:path": "a",
                                                               "checkov": {"skip": []}}},
            "Bucket": {"Type": "AWS::S3::Bucket", "Metadata": {"aws:cdk:path": "S/Bucket"}},
        },
        "Outputs": {"O": {"Value": "v"}},
    }  # fmt: skip
    assert infrastructure(template) == {
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function", "Metadata": {"checkov": {"skip": []}}},
            "Bucket": {"Type": "AWS::S3::Bucket"},
        },
        "Outputs": {"O": {"Value": "v"}},
    }


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_mask_hides_only_hashes() -> None:
    digest = "a" * 64
    assert mask({"S3Key": f"{digest}.zip", "n": [1, "x"]}) == {"S3Key": "<asset-hash>.zip", "n": [1, "x"]}


def test_dev_templates(dev_templates: Templates, snapshot_json: SnapshotAssertion) -> None:
    for stack_id in sorted(dev_templates):
        assert mask(infrastructure(dev_templates[stack_id])) == snapshot_json(name=stack_id)


@pytest.mark.thorough
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_templates(
    name: str, tmp_path_factory: pytest.TempPathFactory, snapshot_json: SnapshotAssertion
) -> None:
    """Peer-access stacks, cross-account roles, secondary CIDRs and NAT modes show up only in these."""
    templates = load_shape(name, tmp_path_factory).templates
    for stack_id in sorted(templates):
        assert mask(infrastructure(templates[stack_id])) == snapshot_json(name=stack_id)
