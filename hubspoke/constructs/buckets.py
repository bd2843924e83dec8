"""Bucket settings every hubspoke bucket shares, made at the CloudFormation level so they add no resource."""

from __future__ import annotations

from aws_cdk import aws_s3 as s3


def events_to_eventbridge(bucket: s3.Bucket) -> None:
    """Send the bucket's events to the account's default EventBridge bus (Control Tower CT.S3.PR.4).

    Set on the CfnBucket itself (AWS::S3::Bucket NotificationConfiguration.EventBridgeConfiguration, "Update
    requires: No interruption"): the L2 `event_bridge_enabled` prop would add CDK's Custom::S3BucketNotifications
    handler, a Lambda function outside the VPC. Events from AWS services reach the default bus at no charge
    (Amazon EventBridge pricing), and no rule here consumes them: they are there for an audit or a rule the
    account owner adds. Every CNQ block write becomes an event, so a rule that forwards them to another account
    or bus is billed per event. Upgrading: CloudFormation writes the bucket's whole notification configuration,
    so notifications added to these buckets outside the stack are replaced (aws/aws-cdk#29653).
    """
    cfn = bucket.node.default_child
    if not isinstance(cfn, s3.CfnBucket):
        raise TypeError(f"{bucket.node.path} has no CfnBucket to configure")
    cfn.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
