"""The identity Qumulo Shift-From copies datasets with: an IAM user that may read the configured buckets only.

Shift-From takes an access key ID and secret access key in the relationship it creates and uses nothing else:
no instance role, no anonymous access (Qumulo administrator guide, "Using Qumulo Shift-From to Copy Objects
from Amazon S3", "Prerequisites" and "Restrictions"; SDK qumulo.rest.object_replication.
create_object_relationship takes access_key_id and secret_access_key). An access key belongs to an IAM
user, so the hub gets one, with the guide's minimal permissions (its "Example IAM Policy": s3:ListBucket on
the bucket, s3:GetObject on its objects) on each bucket of dataset.source_buckets and nothing more. Its key
pair lives in a Secrets Manager secret that `hubspoke dataset load` reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import SecretValue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hubspoke.policy.acks import acknowledge


class ShiftFromUser(Construct):
    """An IAM user allowed to list and get the objects of `buckets`, and a secret holding its access key."""

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
        key = iam.AccessKey(self, "Key", user=self.user)
        self.secret = secretsmanager.Secret(
            self,
            "Keys",
            description=f"hubspoke {environment}: access key of the Qumulo Shift-From user (dataset load)",
            secret_object_value={
                "access_key_id": SecretValue.unsafe_plain_text(key.access_key_id),
                "secret_access_key": key.secret_access_key,
            },
        )
        acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            reason="An IAM access key has no managed rotation in Secrets Manager; rotating it means a new key on "
            "the user, which a Shift relationship created with the old key does not pick up. Loads delete their "
            "relationship when done, so the operator rotates between loads by replacing the key (ASSUMED "
            "procedure, docs/datasets.md).",
        )
        acknowledge(
            self.secret,
            "CKV_AWS_149",
            reason="Encrypted with the AWS managed key of Secrets Manager; who may read it is decided by IAM on "
            "its ARN (the operator running `hubspoke dataset load`).",
            resource_types=["AWS::SecretsManager::Secret"],
        )
