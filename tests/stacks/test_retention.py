"""Across every template of config/dev.yaml: whatever holds data survives stack deletion and replacement."""

from __future__ import annotations

from tests.conftest import Templates

# Types that hold data or the only means to read it: buckets, keys, secrets, volumes, VPC flow logs.
DATA_BEARING = {
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::SecretsManager::Secret",
    "AWS::EC2::Volume",
}


def test_every_data_bearing_resource_is_retained(dev_templates: Templates) -> None:
    seen = 0
    for stack_id, template in dev_templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] not in DATA_BEARING:
                continue
            seen += 1
            where = f"{stack_id}/{logical_id} ({resource['Type']})"
            assert resource.get("DeletionPolicy") == "Retain", f"{where} is deleted with its stack"
            assert resource.get("UpdateReplacePolicy") == "Retain", f"{where} is deleted on replacement"
    assert seen >= 10  # buckets, keys and secrets of both CNQ clusters at least: the check ran on something


def test_flow_logs_are_retained(dev_templates: Templates) -> None:
    for stack_id in (s for s in dev_templates if s.startswith("network-")):
        groups = [
            r for r in dev_templates[stack_id]["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"
        ]
        assert groups and all(g.get("DeletionPolicy") == "Retain" for g in groups), stack_id
