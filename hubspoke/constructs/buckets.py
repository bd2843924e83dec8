"""Bucket settings every hubspoke bucket shares, made at the CloudFormation level so they add no resource."""

from __future__ import annotations

from aws_cdk import aws_s3 as s3
from constructs import IConstruct

from hubspoke.policy.acks import acknowledge


def events_to_eventbridge(bucket: s3.Bucket) -> None:
    """Send the bucket's events to the account's default EventBridge bus (Control Tower CT.S3.PR.4).

    Set on the CfnBucket (NotificationConfiguration.EventBridgeConfiguration, "Update requires: No
    interruption"): the L2 `event_bridge_enabled` adds CDK's Custom::S3BucketNotifications Lambda outside the
    VPC. Free on the default bus (Amazon EventBridge pricing) and consumed by no rule here; a forwarding rule
    is billed per event. Notifications added outside the stack are replaced (aws/aws-cdk#29653).
    """
    cfn = bucket.node.default_child
    if not isinstance(cfn, s3.CfnBucket):
        raise TypeError(f"{bucket.node.path} has no CfnBucket to configure")
    cfn.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)


def accept_access_log_bucket_findings(logs: IConstruct, *, receives: str) -> None:
    """The Control Tower and checkov bucket controls an S3 server-access-log bucket cannot meet, with reasons;
    `receives` names whose logs it holds ("the model export bucket's")."""
    not_logged = (
        f"This bucket receives {receives} access logs; logging it into itself would loop, and logging it "
        "elsewhere only moves the question."
    )
    acknowledge(logs, "CT.S3.PR.2", reason=not_logged)
    acknowledge(logs, "CKV_AWS_18", reason=not_logged, resource_types=["AWS::S3::Bucket"])
    retention_is_the_owners = (
        "Keeping, versioning or protecting access logs from deletion is the account owner's audit policy (often "
        "a central log archive that collects them), not this stack's; the bucket is retained on delete."
    )
    acknowledge(logs, "CT.S3.PR.11", reason=retention_is_the_owners)
    acknowledge(logs, "CKV_AWS_21", reason=retention_is_the_owners, resource_types=["AWS::S3::Bucket"])
    acknowledge(
        logs,
        "CT.S3.PR.9",
        reason="A bucket with Object Lock cannot receive server access logs (Amazon S3 User Guide, 'Object Lock "
        "considerations'), which is this bucket's only use.",
    )
    acknowledge(
        logs,
        "CT.S3.PR.10",
        reason="S3 server access logging delivers only into buckets encrypted with SSE-S3, not SSE-KMS (Amazon "
        "S3 User Guide, 'Enabling Amazon S3 server access logging'); the logs hold request metadata only.",
    )
