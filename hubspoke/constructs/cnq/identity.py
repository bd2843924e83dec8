"""A least-privilege Qumulo identity: its generated secret and the custom resource that converges it on a cluster.

The secret is JSON {"username", "password"} (Secrets Manager's SecretStringGenerator: secret_string_template plus
generate_string_key), with a generated name; the provisioner (runtime/identities.py) creates the Qumulo role with
exactly `privileges`, the local user with the secret's password, its membership and, with `write_path`, its
inheritable ACE there. Consumers read the secret, never the cluster's admin password.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import CustomResource, RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hubspoke.constructs.cnq.infrastructure import PASSWORD_EXCLUDED, CnqCluster
from hubspoke.constructs.cnq.provisioning import CnqProvisioner
from hubspoke.constructs.cnq.runtime.resources import IDENTITY_RESOURCE
from hubspoke.dataset_load import HOLD_PRIVILEGE
from hubspoke.policy.acks import acknowledge

# Privileges from the vendor's pages: Shift-From's WRITE and READ ("Using Qumulo Shift-From to Copy Objects
# from Amazon S3", "Prerequisites", Qumulo/docs@b6ddb9ae); sealing's file locks "require the
# FS_FILE_LOCK_WRITE privilege" (administrator guide, "Managing File Locks"; hubspoke/dataset_load.py
# hold_version).
LOADER_PRIVILEGES = (
    "PRIVILEGE_REPLICATION_OBJECT_READ",
    "PRIVILEGE_REPLICATION_OBJECT_WRITE",
    HOLD_PRIVILEGE,
)
# Prewarm reads and fetches every file whatever its ACL: PRIVILEGE_FILE_READ_ACCESS (REST guide
# /v1/auth/roles; qumulo.rest.fs read_directory, fetch_data). ASSUMED: fetch-data needs no other privilege (no
# REST guide page).
PREWARM_PRIVILEGES = ("PRIVILEGE_FILE_READ_ACCESS",)


class QumuloIdentity(Construct):
    """One purpose's Qumulo user on `cluster`: `secret` holds its login, the resource keeps it converged."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: CnqCluster,
        provisioner: CnqProvisioner,
        purpose: str,
        privileges: Sequence[str],
        write_path: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        username = f"hubspoke-{purpose}"
        self.secret = secretsmanager.Secret(
            self,
            "Login",
            description=f"CNQ {cluster.name}: login of the Qumulo user {username} ({purpose})",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"username": username}),
                generate_string_key="password",
                password_length=24,
                exclude_characters=PASSWORD_EXCLUDED,
                require_each_included_type=True,
            ),
            # Retained (generated name: a redeploy makes a new one beside it), except by the rollback of the create
            # that made it, which deletes it so a failed first create leaves nothing billed (CloudFormation
            # DeletionPolicy RetainExceptOnCreate; aws-cdk-lib RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE).
            removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        )
        acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            reason="the password is a Qumulo local user's: a Secrets Manager rotation would change the secret "
            "without changing the cluster; a redeploy sets the cluster's copy from the secret (the provisioner)",
        )
        acknowledge(
            self.secret,
            "CKV_AWS_149",
            reason="encrypted with the AWS managed key of Secrets Manager; who may read it is decided by IAM on "
            "its ARN (this Region's provisioner and the role the operator grants), as for the admin secret",
            resource_types=["AWS::SecretsManager::Secret"],
        )
        self.secret.grant_read(provisioner.function)
        cluster.admin_secret.grant_read(provisioner.function)
        self.resource: CustomResource = provisioner.resource(
            self,
            "Converge",
            resource_type=IDENTITY_RESOURCE,
            properties={
                "ClusterName": cluster.name,
                "RestAddresses": cluster.node_ips,
                "AdminSecretArn": cluster.admin_secret.secret_arn,
                "IdentitySecretArn": self.secret.secret_arn,
                "Role": username,
                "Privileges": sorted(privileges),
                **({"WritePath": write_path} if write_path else {}),
            },
        )
