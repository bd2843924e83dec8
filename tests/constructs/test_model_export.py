"""The model export bucket and its Pod Identity role, in a bare stack.

Sources for the expected shapes: CloudFormation User Guide, "DeletionPolicy attribute" (Retain keeps the resource
when the stack goes or a create rolls back); AWS::S3::Bucket BucketName ("If you don't specify a name, AWS
CloudFormation generates a unique ID"); EKS User Guide, "Create IAM role with trust policy required by EKS Pod
Identity" (principal pods.eks.amazonaws.com, sts:AssumeRole and sts:TagSession, aws:RequestTag/kubernetes-namespace
and aws:RequestTag/kubernetes-service-account conditions); AWS::EKS::PodIdentityAssociation (ClusterName,
Namespace, ServiceAccount, RoleArn).
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Template

from hubspoke.constructs.model_export import ModelExport

Json = dict[str, Any]


@pytest.fixture(scope="module")
def template() -> Json:
    stack = Stack(App(), "Compute", env=Environment(account="123456789012", region="us-west-2"))
    ModelExport(
        stack, "ModelExport", cluster_name="dev-usw2", namespace="training", service_account="exporter"
    )
    return dict(Template.from_stack(stack).to_json())


def _of_type(template: Json, kind: str) -> dict[str, Json]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _export_bucket(template: Json) -> tuple[str, Json]:
    [(name, bucket)] = [
        (k, r)
        for k, r in _of_type(template, "AWS::S3::Bucket").items()
        if "LoggingConfiguration" in r["Properties"]
    ]
    return name, bucket


def test_every_bucket_and_the_key_are_retained_under_generated_names(template: Json) -> None:
    buckets = _of_type(template, "AWS::S3::Bucket")
    assert len(buckets) == 2  # the export bucket and its access-log bucket
    for resource in [*buckets.values(), *_of_type(template, "AWS::KMS::Key").values()]:
        assert resource["DeletionPolicy"] == "Retain" and resource["UpdateReplacePolicy"] == "Retain"
    assert all("BucketName" not in b["Properties"] for b in buckets.values())


def test_the_export_bucket_is_kms_encrypted_logged_and_tls_only(template: Json) -> None:
    name, bucket = _export_bucket(template)
    [rule] = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    [key] = _of_type(template, "AWS::KMS::Key")
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": [key, "Arn"]}
    assert bucket["Properties"]["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    policies = [
        p
        for p in _of_type(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": name}
    ]
    [policy] = policies
    denies = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def test_the_role_reaches_this_bucket_and_key_only(template: Json) -> None:
    name, _ = _export_bucket(template)
    [key] = _of_type(template, "AWS::KMS::Key")
    [policy] = _of_type(template, "AWS::IAM::Policy").values()
    actions: set[str] = set()
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        granted = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        actions.update(granted)
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        for resource in resources:
            assert resource != "*"
            text = repr(resource)
            assert f"'{name}'" in text or f"'{key}'" in text, resource
            if any(a.startswith("kms:") for a in granted):
                assert resource == {"Fn::GetAtt": [key, "Arn"]}
    assert {"s3:ListBucket", "s3:GetObject", "s3:PutObject", "kms:GenerateDataKey", "kms:Decrypt"} <= actions
    assert not any(a.endswith("*") or a.startswith("s3:Delete") for a in actions)


def test_only_the_named_service_account_assumes_the_role(template: Json) -> None:
    [role] = _of_type(template, "AWS::IAM::Role").values()
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert trust["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/kubernetes-namespace": "training",
            "aws:RequestTag/kubernetes-service-account": "exporter",
        }
    }
    [association] = _of_type(template, "AWS::EKS::PodIdentityAssociation").values()
    [role_id] = _of_type(template, "AWS::IAM::Role")
    assert association["Properties"] == {
        "ClusterName": "dev-usw2",
        "Namespace": "training",
        "ServiceAccount": "exporter",
        "RoleArn": {"Fn::GetAtt": [role_id, "Arn"]},
    }
