"""Across every template of every topology shape: whatever holds data survives stack deletion and replacement."""

from __future__ import annotations

from tests.conftest import Shape

# Types that hold data or the only means to read it: buckets, keys, secrets, volumes, VPC flow logs.
DATA_BEARING = {
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::SecretsManager::Secret",
    "AWS::EC2::Volume",
}


# Kept when the stack is deleted or the resource replaced (CloudFormation Template Reference, "DeletionPolicy
# attribute"): Retain, or RetainExceptOnCreate, which "behaves like Retain for stack operations, except for the
# stack operation that initially created the resource" (a rolled-back first create deletes it). The CNQ key and
# secrets are RetainExceptOnCreate since 37eb777; buckets stay Retain, since S3 deletes only an empty bucket.
KEPT_ON_DELETE = {"Retain", "RetainExceptOnCreate"}


def test_every_data_bearing_resource_is_retained(shape: Shape) -> None:
    seen = 0
    for stack_id, template in shape.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] not in DATA_BEARING:
                continue
            seen += 1
            where = f"{stack_id}/{logical_id} ({resource['Type']})"
            kept = {"Retain"} if resource["Type"] == "AWS::S3::Bucket" else KEPT_ON_DELETE
            assert resource.get("DeletionPolicy") in kept, f"{where} is deleted with its stack"
            assert resource.get("UpdateReplacePolicy") == "Retain", f"{where} is deleted on replacement"
    # The check ran on something: each CNQ cluster's buckets (plus their access-log bucket), key and secret.
    clusters = [r.storage for r in shape.config.regions() if r.storage.enabled]
    assert seen >= sum(s.buckets + 3 for s in clusters)


def test_flow_logs_are_retained(shape: Shape) -> None:
    for stack_id in (s for s in shape.templates if s.startswith("network-")):
        groups = [
            r for r in shape.templates[stack_id]["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"
        ]
        assert groups and all(g.get("DeletionPolicy") == "Retain" for g in groups), stack_id
