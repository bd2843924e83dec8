"""The one way hubspoke makes a KMS key: rotated, and retained when its stack goes, because data outlives stacks."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from hubspoke.policy.acks import acknowledge

# The CT.KMS.PR.3 statement's Sid: hubspoke/policy/hyperpod.py finds it on keys that must not carry it.
GRANT_DENY_SID = "GrantsOnlyForAwsServices"


def retained_key(
    scope: Construct, construct_id: str, *, description: str, caller_grants: str | None = None
) -> kms.Key:
    """A customer-managed key with yearly rotation, kept (with everything it encrypts) on delete or replacement.

    `caller_grants`: why grants on this key are made in the name of the API's caller rather than flagged as for an
    AWS resource. Such a key goes without the CT.KMS.PR.3 statement (it would deny that grant), and the control is
    acknowledged on it with this reason.

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
    if caller_grants is not None:
        acknowledge(key, "CT.KMS.PR.3", reason=caller_grants)
        return key
    # Grants on our keys are made by AWS services on our behalf (EC2 for EBS volumes, EKS for secrets, HyperPod),
    # never by people: deny every other CreateGrant. Control Tower proactive control CT.KMS.PR.3 requires this
    # statement, with BoolIfExists on both keys (AWS KMS Developer Guide, kms:GrantIsForAWSResource).
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=GRANT_DENY_SID,
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
