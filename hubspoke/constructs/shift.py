"""The identity Qumulo Shift-From copies datasets as: an IAM user that may read the configured buckets only.

Shift-From takes only an access key (Qumulo administrator guide, "Using Qumulo Shift-From to Copy Objects from
Amazon S3", "Prerequisites" and "Restrictions"; SDK
qumulo.rest.object_replication.create_object_relationship), so the hub gets an IAM user whose group holds the
guide's s3:GetObject, s3:GetObjectTagging and s3:ListBucket (Qumulo/docs@b6ddb9ae, "Example IAM Policy") on
dataset.source_buckets, and kms:Decrypt on dataset.source_kms_key_arns (S3 User Guide, "Using server-side
encryption with AWS KMS keys (SSE-KMS)"; ASSUMED: Shift-From reads SSE-KMS objects). `hubspoke dataset load`
makes one key per load and deletes it at seal or give-up (docs/datasets.md); no secret passes through a
template.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.policy.acks import acknowledge


class ShiftFromUser(Construct):
    """An IAM user, without keys, allowed to list `buckets` and get their objects and tags through its group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        buckets: Sequence[str],
        kms_keys: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        # The stack's partition (aws, aws-cn, aws-us-gov), as hubspoke/constructs/cross_account.py does.
        partition = Stack.of(self).partition
        if not buckets:
            raise ValueError("ShiftFromUser needs at least one bucket (dataset.source_buckets)")
        # Permissions through a group, not on the user (Control Tower CT.IAM.PR.4 refuses a policy on a user).
        self.group = iam.Group(self, "Readers", path=f"/hubspoke/{environment}/")
        self.user = iam.User(self, "User", path=f"/hubspoke/{environment}/", groups=[self.group])
        statements = [
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[f"arn:{partition}:s3:::{bucket}" for bucket in buckets],
            ),
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:GetObjectTagging"],
                resources=[f"arn:{partition}:s3:::{bucket}/*" for bucket in buckets],
            ),
        ]
        if kms_keys:
            statements.append(iam.PolicyStatement(actions=["kms:Decrypt"], resources=list(kms_keys)))
        policy = iam.Policy(self, "ReadSources", statements=statements)
        policy.attach_to_group(self.group)
        acknowledge(
            policy,
            "AwsSolutions-IAM5",
            reason="s3:GetObject and s3:GetObjectTagging on the objects of each configured source bucket: the "
            "guide's policy scopes them to one folder, but which folder a load copies is chosen per load, not "
            "at deploy time; only the buckets listed in dataset.source_buckets are named.",
            # cdk-nag names the partition token <AWS::Partition> in its finding IDs.
            findings=[f"Resource::arn:<AWS::Partition>:s3:::{bucket}/*" for bucket in buckets],
        )
