"""The CNQ resources of the synthesized Storage stack (config/dev.yaml): what a rollback or a failed create keeps.

CloudFormation's DeletionPolicy decides what a rollback and a stack delete do to a resource (CloudFormation
Template Reference, "DeletionPolicy attribute": Retain keeps it; RetainExceptOnCreate keeps it except when the
operation that created it rolls back, which deletes it).
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Templates, resources

STACK = "storage-us-east-2"


def _ref_id(value: Any) -> str | None:
    """The logical ID a {"Ref": ...} or {"Fn::GetAtt": [...]} points at."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return None


def _data_buckets(template: dict[str, Any]) -> list[str]:
    return [i for i, _ in resources(template, "AWS::S3::Bucket") if "PersistentStorage" in i]


def test_each_data_bucket_grants_the_nodes_in_a_policy_no_rollback_removes(dev_templates: Templates) -> None:
    """The nodes' role keeps its access to a bucket an update added even when that update rolls back and its
    role policy goes back to the old bucket list: the grant also sits in the bucket's own policy, retained, and
    either policy suffices within one account (IAM User Guide, "Policy evaluation for requests within a single
    account")."""
    template = dev_templates[STACK]
    roles = [i for i, _ in resources(template, "AWS::IAM::Role") if "NodeRole" in i]
    assert len(roles) == 1
    buckets = _data_buckets(template)
    assert buckets
    granted = set()
    for _, policy in resources(template, "AWS::S3::BucketPolicy"):
        bucket = _ref_id(policy["Properties"]["Bucket"])
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            principal = (statement.get("Principal") or {}).get("AWS")
            if statement["Effect"] == "Allow" and _ref_id(principal) == roles[0]:
                assert (
                    policy.get("DeletionPolicy") == "Retain" and policy.get("UpdateReplacePolicy") == "Retain"
                )
                assert "s3:PutObject" in statement["Action"] and "s3:GetObject*" in statement["Action"]
                granted.add(bucket)
    assert granted == set(buckets)
