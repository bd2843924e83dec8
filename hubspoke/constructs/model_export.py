"""The Region's bucket for exported models and the EKS Pod Identity role the export Job writes to it as.

Checkpoints live on the Region's CNQ, unreadable once its Storage stack is gone (docs/runbooks/teardown.md);
`hubspoke render export` copies a run's final one here (workload/export_model.py). The bucket holds data, so it
is retained, and its name is generated: CloudFormation keeps a retained bucket when its stack is deleted or a
create rolls back (CloudFormation User Guide, "DeletionPolicy attribute"), and a fixed name would then block
the next create.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hubspoke.constructs.buckets import accept_access_log_bucket_findings, events_to_eventbridge
from hubspoke.constructs.keys import retained_key
from hubspoke.constructs.provider import logical_id
from hubspoke.policy.acks import acknowledge

# S3 server access logs cannot be delivered to a bucket encrypted with SSE-KMS (Amazon S3 User Guide, "Enabling
# Amazon S3 server access logging": the target bucket must use SSE-S3), so the log bucket uses SSE-S3.
ABANDONED_UPLOAD_DAYS = 7


class ModelExport(Construct):
    """An encrypted, retained bucket for exported models, and the role one service account uses to write to it.

    Example::

        export = ModelExport(self, "ModelExport", cluster_name=eks_cluster.cluster_name,
                             namespace="hyperpod-training", service_account="hubspoke-model-export")
        export.bucket.bucket_name
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster_name: str, namespace: str, service_account: str
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = retained_key(self, "Key", description="Encrypts the exported models of this Region")
        logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
            # The enabled lifecycle rule Control Tower's CT.S3.PR.6 asks for; expiry of the logs is the owner's.
            lifecycle_rules=[
                s3.LifecycleRule(abort_incomplete_multipart_upload_after=Duration.days(ABANDONED_UPLOAD_DAYS))
            ],
        )
        acknowledge(
            logs,
            "AwsSolutions-S1",
            reason="this bucket receives the model export bucket's access logs; logging it into itself would loop "
            "and logging it elsewhere only moves the question",
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            # One data key per bucket instead of a KMS call per object (Amazon S3 User Guide, "S3 Bucket Keys").
            bucket_key_enabled=True,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            server_access_logs_bucket=logs,
            server_access_logs_prefix="model-export/",
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[
                # A killed export leaves its multipart uploads' parts, billed until aborted; a re-run starts the
                # file afresh (workload/export_model.py), so they are of no use after a week.
                s3.LifecycleRule(
                    abort_incomplete_multipart_upload_after=Duration.days(ABANDONED_UPLOAD_DAYS)
                ),
                # Versioning keeps a re-export from silently replacing a model; superseded versions go after a
                # year (Control Tower CT.S3.PR.3 and CT.S3.PR.6 ask for a lifecycle rule on versioned buckets).
                s3.LifecycleRule(noncurrent_version_expiration=Duration.days(365)),
            ],
        )
        for bucket in (logs, self.bucket):
            events_to_eventbridge(bucket)
        _accept_bucket_findings(bucket=self.bucket, logs=logs)
        self.role = self._role(namespace=namespace, service_account=service_account)
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "Association",
            cluster_name=cluster_name,
            namespace=namespace,
            service_account=service_account,
            role_arn=self.role.role_arn,
        )
        # The role's policies outlive the association (tests/test_role_grant_order.py).
        self.association.node.add_dependency(self.role)

    def _role(self, *, namespace: str, service_account: str) -> iam.Role:
        # The trust policy EKS Pod Identity needs (sts:AssumeRole and sts:TagSession for pods.eks.amazonaws.com),
        # narrowed to one namespace and service account by the session tags it sets (EKS User Guide, "Create IAM
        # role with trust policy required by EKS Pod Identity").
        principal = iam.ServicePrincipal(
            "pods.eks.amazonaws.com",
            conditions={
                "StringEquals": {
                    "aws:RequestTag/kubernetes-namespace": namespace,
                    "aws:RequestTag/kubernetes-service-account": service_account,
                }
            },
        ).with_session_tags()
        role = iam.Role(
            self,
            "Role",
            description=f"EKS Pod Identity role of the model export Job ({namespace}/{service_account})",
            assumed_by=principal,
        )
        # s3:ListBucket makes a missing key's HeadObject 404, not 403: "not uploaded yet" (Amazon S3 API
        # Reference, HeadObject); multipart needs s3:PutObject and s3:AbortMultipartUpload (Amazon S3 User
        # Guide, "Multipart upload API and permissions").
        role.add_to_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn]))
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "s3:GetObject",
                    "s3:PutObject",
                    "s3:AbortMultipartUpload",
                    "s3:ListMultipartUploadParts",
                ],
                resources=[self.bucket.arn_for_objects("*")],
            )
        )
        # SSE-KMS: writing needs kms:GenerateDataKey, and a multipart upload also kms:Decrypt (same page as above).
        role.add_to_policy(
            iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[self.key.key_arn])
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            reason="the export Job writes objects under keys named by environment, Region, run and file, which "
            "no template knows; the statement names this bucket only",
            findings=[f"Resource::<{logical_id(self.bucket)}.Arn>/*"],
        )
        return role


def _accept_bucket_findings(*, bucket: s3.Bucket, logs: s3.Bucket) -> None:
    """Control Tower and checkov bucket controls these two buckets do not meet, each with its reason."""
    acknowledge(
        bucket,
        "CT.S3.PR.9",
        reason="Object Lock without a default retention locks nothing; with one, the owner could not delete an "
        "unwanted export until it ends, and once on it cannot be turned off (Amazon S3 User Guide, 'Object Lock "
        "considerations'). Versioning already keeps a year of replaced exports.",
    )
    accept_access_log_bucket_findings(logs, receives="the model export bucket's")
