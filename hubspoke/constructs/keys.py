"""The one way hubspoke makes a KMS key: rotated, and retained when its stack goes, because data outlives stacks."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from constructs import Construct


def retained_key(scope: Construct, construct_id: str, *, description: str) -> kms.Key:
    """A customer-managed key with yearly rotation, kept (with everything it encrypts) on delete or replacement.

    Example::

        key = retained_key(self, "Key", description="CNQ hub: persistent storage and node volumes")
    """
    return kms.Key(
        scope,
        construct_id,
        description=description,
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )
