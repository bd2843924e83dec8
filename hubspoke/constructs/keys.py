"""The one way hubspoke makes a KMS key: rotated, and retained when its stack goes, because data outlives stacks."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct


def retained_key(scope: Construct, construct_id: str, *, description: str) -> kms.Key:
    """A customer-managed key with yearly rotation, kept (with everything it encrypts) on delete or replacement.

    Example::

        key = retained_key(self, "Key", description="CNQ hub: persistent storage and node volumes")
    """
    key = kms.Key(
        scope,
        construct_id,
        description=description,
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )
    # Grants on our keys are made by AWS services on our behalf (EC2 for EBS volumes, EKS for secrets, HyperPod),
    # never by people: deny every other CreateGrant. Control Tower proactive control CT.KMS.PR.3 requires this
    # statement, with BoolIfExists on both keys (AWS KMS Developer Guide, kms:GrantIsForAWSResource).
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="GrantsOnlyForAwsServices",
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["kms:CreateGrant"],
            resources=["*"],
            conditions={
                "BoolIfExists": {"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"}
            },
        )
    )
    return key
