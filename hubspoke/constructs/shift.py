"""The identity Qumulo Shift-From copies datasets as: an IAM user that may read the configured buckets only.

Shift-From takes an access key ID and secret access key in the relationship it creates and uses nothing else:
no instance role, no anonymous access (Qumulo administrator guide, "Using Qumulo Shift-From to Copy Objects
from Amazon S3", "Prerequisites" and "Restrictions"; SDK qumulo.rest.object_replication.
create_object_relationship takes access_key_id and secret_access_key). An access key belongs to an IAM
user, so the hub gets one, in a group holding the guide's minimal permissions (its "Example IAM Policy":
s3:ListBucket on the bucket, s3:GetObject on its objects) on each bucket of dataset.source_buckets and nothing
more. The stack creates no access key: `hubspoke dataset load` creates one per load and deletes it when the
load is sealed, so no long-lived key exists and no secret passes through a template.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.policy.acks import acknowledge


class ShiftFromUser(Construct):
    """An IAM user, without keys, allowed to list and get the objects of `buckets` through its group."""

    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, buckets: Sequence[str]
    ) -> None:
        super().__init__(scope, construct_id)
        if not buckets:
            raise ValueError("ShiftFromUser needs at least one bucket (dataset.source_buckets)")
        # Permissions through a group, not on the user (Control Tower CT.IAM.PR.4 refuses a policy on a user).
        self.group = iam.Group(self, "Readers", path=f"/hubspoke/{environment}/")
        self.user = iam.User(self, "User", path=f"/hubspoke/{environment}/", groups=[self.group])
        policy = iam.Policy(
            self,
            "ReadSources",
            statements=[
                iam.PolicyStatement(
                    actions=["s3:ListBucket"], resources=[f"arn:aws:s3:::{bucket}" for bucket in buckets]
                ),
                iam.PolicyStatement(
                    actions=["s3:GetObject"], resources=[f"arn:aws:s3:::{bucket}/*" for bucket in buckets]
                ),
            ],
        )
        policy.attach_to_group(self.group)
        acknowledge(
            policy,
            "AwsSolutions-IAM5",
            reason="s3:GetObject on the objects of each configured source bucket: the guide's policy scopes it "
            "to one folder, but which folder a load copies is chosen per load, not at deploy time; only the "
            "buckets listed in dataset.source_buckets are named.",
            findings=[f"Resource::arn:aws:s3:::{bucket}/*" for bucket in buckets],
        )
