"""The CNQ resources of the synthesized Storage stack (config/dev.yaml): what a rollback or a failed create keeps.

CloudFormation's DeletionPolicy decides what a rollback and a stack delete do to a resource (CloudFormation
Template Reference, "DeletionPolicy attribute": Retain keeps it; RetainExceptOnCreate keeps it except when the
operation that created it rolls back, which deletes it).
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Templates, properties, resources

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


def test_a_failed_first_create_deletes_the_key_and_secrets_and_keeps_only_buckets(
    dev_templates: Templates,
) -> None:
    """RetainExceptOnCreate ("DeletionPolicy attribute": the resource is deleted when the operation that created
    it rolls back, kept otherwise) on the CNQ key and its secrets, so a failed first create leaves none of them
    billed; the data buckets stay Retain: Qumulo writes to them from formation on and S3 deletes only an empty
    bucket (S3 API Reference, DeleteBucket), so deleting them would fail the rollback."""
    template = dev_templates[STACK]
    keys = [r for i, r in resources(template, "AWS::KMS::Key") if i.startswith("Cnq")]
    secrets = [
        r
        for i, r in resources(template, "AWS::SecretsManager::Secret")
        if i.startswith(("Cnq", "Loader", "Prewarm"))
    ]
    assert keys and secrets
    for resource in (*keys, *secrets):
        assert resource["DeletionPolicy"] == "RetainExceptOnCreate"
        assert resource["UpdateReplacePolicy"] == "Retain"
    for bucket in _data_buckets(template):
        assert template["Resources"][bucket]["DeletionPolicy"] == "Retain"


def test_the_provisioner_functions_are_told_the_tag_keys_the_nodes_and_their_permissions_use(
    dev_templates: Templates,
) -> None:
    """The runtime ships alone, so its tag keys come in its environment: both functions (on-event and
    is-complete) carry the key the nodes are tagged with and the two keys the provisioner may write, and each is
    the key the template's nodes and the provisioner's tag-scoped permissions name."""
    template = dev_templates[STACK]
    expected = {
        "HUBSPOKE_CNQ_CLUSTER_TAG": "hubspoke:cnq-cluster",
        "HUBSPOKE_CNQ_CREATE_SENT_TAG": "hubspoke:cnq-create-sent",
        "HUBSPOKE_CNQ_CLAMP_SENT_TAG": "hubspoke:cnq-clamp-sent",
    }
    told = [
        props["Environment"]["Variables"]
        for _, props in properties(template, "AWS::Lambda::Function")
        if "HUBSPOKE_CNQ_CLUSTER_TAG" in props.get("Environment", {}).get("Variables", {})
    ]
    assert len(told) == 2 and all(variables == expected for variables in told)
    node_tags = {
        tag["Key"] for _, props in properties(template, "AWS::EC2::Instance") for tag in props.get("Tags", [])
    }
    assert "hubspoke:cnq-cluster" in node_tags
    assert "aws:ResourceTag/hubspoke:cnq-cluster" in str(template), (
        "the provisioner's scope names the same key"
    )
