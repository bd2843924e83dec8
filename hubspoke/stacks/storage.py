"""A Region's Storage stack: its CNQ cluster, formed by the provisioning custom resource, and in a spoke the portal."""

from __future__ import annotations

from typing import cast

from aws_cdk import CustomResource, Duration, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.aws_secretsmanager import CfnSecret
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.buckets import accept_access_log_bucket_findings
from hubspoke.constructs.cnq.identity import LOADER_PRIVILEGES, PREWARM_PRIVILEGES, QumuloIdentity
from hubspoke.constructs.cnq.infrastructure import CnqCluster
from hubspoke.constructs.cnq.provisioning import CnqProvisioner
from hubspoke.constructs.cnq.runtime.resources import (
    CLUSTER_RESOURCE,
    NODE_PROTECTION_RESOURCE,
    PERSISTENT_STORAGE_RESOURCE,
    PORTAL_RESOURCE,
)
from hubspoke.constructs.shift import ShiftFromUser
from hubspoke.mtu import peer_mtu_parameter_path, peer_mtu_parameters
from hubspoke.names import cnq_cluster_name
from hubspoke.outputs import (
    ADMIN_SECRET,
    FLOATING_IPS,
    LOADER_SECRET,
    PREWARM_SECRET,
    REST_ADDRESS,
    SHIFT_USER,
)
from hubspoke.policy.acks import acknowledge
from hubspoke.stacks.base import PlannedStack, sibling
from hubspoke.stacks.wiring import NetworkView
from hubspoke.topology import StackPlan

# CNQ families that are Nitro instances (Amazon EC2 Instance Types guide, "Instances built on the AWS Nitro
# System") but newer than the instance lists of the pinned Control Tower rules CT.EC2.PR.16 and CT.EC2.PR.19
# (cdklabs-cdk-validator-cfnguard 0.0.62). ASSUMED: they also encrypt traffic between instances in transit like
# the rest of their generation; not confirmed offline.
NITRO_NEWER_THAN_CONTROL_TOWER_RULES = ("i7i", "i7ie")
# Qumulo's "soft capacity limit" is in decimal terabytes; the create call takes bytes.
BYTES_PER_TB = 10**12


class StorageStack(PlannedStack):
    """One Region's Cloud Native Qumulo cluster; in a spoke, also the portal that caches the hub's dataset.

    Example::

        StorageStack(stage, "storage-us-west-2", config=config, plan=plan)
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        region = config.region_config(plan.region)
        is_hub = region.region == config.hub.region
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"CNQ {'hub' if is_hub else 'spoke'} in {region.region}"
        )
        storage = region.storage
        assert storage.qumulo_core is not None  # required with storage (hubspoke.config.storage_rules)
        network = NetworkView(self, "Network", stage=scope, config=config, region=region.region)
        self.cluster = CnqCluster(
            self,
            "Cnq",
            storage=storage,
            name=cnq_cluster_name(config.environment, region.region),
            environment=config.environment,
            vpc=network.vpc,
            subnet=network.accelerator_subnet,
            client_cidrs=region.all_cidrs,
            peer_path_sg=network.peer_path_security_group,
            # The nodes pin the MTU to what is published in their Region: a spoke publishes its hub here,
            # the hub's spokes are published by their Link stacks (hubspoke.mtu).
            peer_mtu_path=peer_mtu_parameter_path(config),
            published_peer_routes=() if is_hub else peer_mtu_parameters(config, config.hub),
        )
        self.provisioner = CnqProvisioner(
            self,
            "Provisioner",
            vpc=network.vpc,
            subnets=network.private_subnets,
            # A spoke's provisioner also reaches the hub's REST API; the hub's never names a spoke.
            rest_cidrs=[*region.all_cidrs, *([] if is_hub else config.peer_cidrs(region))],
            clusters=[self.cluster.name],
            wait=Duration.minutes(storage.formation_timeout_minutes),
        )
        self.cluster.admin_secret.grant_read(self.provisioner.function)
        self.cluster.assign_floating_ips(self.provisioner)
        self.cluster.refuse_reshaping(self.provisioner)
        # Region-local paths are created here; a spoke's dataset path is the portal's to create.
        # The hub's dataset read-only over NFS: versions are written inside Qumulo only (Shift-From, the REST seal).
        read_only_exports = [storage.dataset_path] if is_hub else []
        exports = [storage.checkpoint_path]
        self.cluster_resource = self.provisioner.resource(
            self,
            "Cluster",
            resource_type=CLUSTER_RESOURCE,
            properties={
                "ClusterName": self.cluster.name,
                "NodeIps": self.cluster.node_ips,
                "NodeInstanceIds": self.cluster.node_instance_ids,
                "FloatingIps": self.cluster.floating_ips,
                "FloatingNetmask": network.accelerator_subnet.ipv4_cidr_block,
                "ObjectStorageUris": self.cluster.object_storage_uris,
                "UsableCapacityBytes": str(storage.soft_capacity_limit_tb * BYTES_PER_TB),
                "ProductType": storage.product_type,
                "QumuloCoreVersion": storage.qumulo_core.version,
                "AdminSecretArn": self.cluster.admin_secret.secret_arn,
                "ExportPaths": exports,
                "ReadOnlyExportPaths": read_only_exports,
                "ClientCidrs": list(region.all_cidrs),
            },
        )
        self.portal_resource = (
            None
            if is_hub
            else self._portal(sibling(scope, StorageStack, "storage", config.hub.region), config)
        )
        _accept_bucket_findings(self.cluster)
        if storage.instance_type.split(".")[0] in NITRO_NEWER_THAN_CONTROL_TOWER_RULES:
            for control in ("CT.EC2.PR.16", "CT.EC2.PR.19"):
                acknowledge(
                    self.cluster,
                    control,
                    reason=f"{storage.instance_type} is a Nitro instance (EC2 Instance Types guide, 'Instances "
                    "built on the AWS Nitro System') newer than the instance list of the pinned rule; an account "
                    "whose Control Tower hook uses the same list refuses it: choose i4i there (docs/policy.md).",
                )
        self.admin_secret_arn = cast(CfnSecret, self.cluster.admin_secret.node.default_child).ref
        self.publish(FLOATING_IPS, self.cluster.floating_ips_joined)
        self.publish(REST_ADDRESS, Fn.select(0, self.cluster.floating_ips))
        self.publish(ADMIN_SECRET, self.cluster.admin_secret.secret_arn)
        # Datasets load into the hub only (docs/datasets.md): its Shift-From user reads the listed buckets.
        self.shift: ShiftFromUser | None = None
        self.loader: QumuloIdentity | None = None
        if is_hub and config.dataset.source_buckets:
            self.shift = ShiftFromUser(
                self,
                "ShiftFrom",
                environment=config.environment,
                buckets=config.dataset.source_buckets,
                kms_keys=config.dataset.source_kms_key_arns,
            )
            self.publish(SHIFT_USER, self.shift.user.user_name)
            # The load's Qumulo login: Shift-From's privileges and write access to the dataset path only.
            self.loader = self._identity(
                "Loader", "loader", LOADER_PRIVILEGES, write_path=storage.dataset_path
            )
            self.publish(LOADER_SECRET, self.loader.secret.secret_arn)
        if not is_hub:
            # Prewarm's Qumulo login (hubspoke/k8s/prewarm.py): read the portal's tree and fetch it, no more.
            self.publish(
                PREWARM_SECRET, self._identity("Prewarm", "prewarm", PREWARM_PRIVILEGES).secret.secret_arn
            )
        self.node_protection = self._protect_nodes_last()
        self.persistent_storage = self._add_buckets_last(storage.soft_capacity_limit_tb * BYTES_PER_TB)

    def _identity(
        self, construct_id: str, purpose: str, privileges: tuple[str, ...], *, write_path: str | None = None
    ) -> QumuloIdentity:
        """A least-privilege Qumulo user, converged once the cluster (and its exported paths) exists."""
        identity = QumuloIdentity(self, construct_id, cluster=self.cluster, provisioner=self.provisioner,
                                  purpose=purpose, privileges=privileges, write_path=write_path)  # fmt: skip
        identity.resource.node.add_dependency(self.cluster_resource)
        return identity

    def _protect_nodes_last(self) -> CustomResource:
        """Termination protection as the stack's last step but one, before the buckets (runtime/nodes.py): a
        failure anywhere else, the portal included, rolls back nodes that were never protected."""
        protection = self.provisioner.resource(
            self,
            "NodeProtection",
            resource_type=NODE_PROTECTION_RESOURCE,
            properties={"ClusterName": self.cluster.name, "NodeInstanceIds": self.cluster.node_instance_ids},
        )
        for child in self.node.children:
            if child is not protection:
                protection.node.add_dependency(child)
        return protection

    def _add_buckets_last(self, usable_bytes: int) -> CustomResource:
        """Buckets an update added reach Qumulo, and the capacity limit rises, as the stack's very last step
        (runtime/provisioner.py, Custom::CnqPersistentStorage): Qumulo cannot give a bucket back, so a failure
        anywhere else rolls back buckets no cluster writes to yet. Qumulo's own CNQ deployments update the
        buckets (persistent storage) as a unit of their own before the cluster (Qumulo/docs @ 0765db6d,
        cnq-guide-aws/deployment-agnostic-post-deployment-actions.md, "Increasing the Soft Capacity Limit")."""
        last = self.provisioner.resource(
            self,
            "PersistentStorage",
            resource_type=PERSISTENT_STORAGE_RESOURCE,
            properties={
                "ClusterName": self.cluster.name,
                "NodeIps": self.cluster.node_ips,
                "NodeInstanceIds": self.cluster.node_instance_ids,
                "ObjectStorageUris": self.cluster.object_storage_uris,
                "UsableCapacityBytes": str(usable_bytes),
                "AdminSecretArn": self.cluster.admin_secret.secret_arn,
            },
        )
        for child in self.node.children:
            if child is not last:
                last.node.add_dependency(child)
        return last

    def _portal(self, hub_storage: StorageStack, config: HubSpokeConfig) -> CustomResource:
        hub = config.hub
        spoke = config.spoke(self.plan.region)
        # Passed joined: the handler splits it (cfn-lint rejects Fn::Split over Fn::GetStackOutput).
        hub_floating = hub_storage.cluster.floating_ips_joined
        # The L1 Ref: the L2 Secret's ARN refuses other environments unless its physical name is fixed.
        hub_secret_arn = hub_storage.admin_secret_arn
        self.provisioner.function.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[hub_secret_arn])
        )
        portal = self.provisioner.resource(
            self,
            "Portal",
            resource_type=PORTAL_RESOURCE,
            properties={
                "SpokeRestAddresses": self.cluster.node_ips,
                "SpokeSecretArn": self.cluster.admin_secret.secret_arn,
                "SpokePortalHosts": self.cluster.floating_ips,
                "HubRestAddresses": hub_floating,
                "HubPortalHosts": hub_floating,
                "HubSecretArn": hub_secret_arn,
                "HubRoot": hub.storage.dataset_path,
                "SpokeRoot": spoke.storage.dataset_path,
                "Mode": spoke.portal.mode,
                "EvictionFreeThreshold": str(spoke.portal.eviction_free_threshold),
                "ClientCidrs": list(spoke.all_cidrs),
            },
        )
        portal.node.add_dependency(self.cluster_resource)
        return portal


def _accept_bucket_findings(cluster: CnqCluster) -> None:
    """Control Tower and checkov bucket controls that do not fit storage Qumulo manages, each with its reason."""
    no_versions = (
        "CNQ rewrites and deletes its own objects as files change: versions would keep every superseded block, "
        "billed, without making the filesystem restorable; protection is the filesystem's (the hub is the copy "
        "of record, a spoke's cache is not a backup), and the buckets are retained on delete."
    )
    for bucket in cluster.buckets:
        acknowledge(bucket, "CT.S3.PR.11", reason=no_versions)
        acknowledge(bucket, "CKV_AWS_21", reason=no_versions, resource_types=["AWS::S3::Bucket"])
        acknowledge(
            bucket,
            "CT.S3.PR.9",
            reason="Object Lock needs S3 Versioning, and once on neither can be suspended (Amazon S3 User Guide, "
            "'Object Lock considerations'): it would bind these buckets to versions, refused for the reason of "
            "CT.S3.PR.11, and a default retention would keep every deleted block billed until it ends.",
        )
        acknowledge(
            bucket,
            "CT.S3.PR.6",
            reason="Expiration or transition rules would delete or move CNQ's blocks behind Qumulo. A rule that "
            "only aborts incomplete multipart uploads would pass, but Qumulo does not document how long CNQ keeps "
            "an upload open, and aborting one under it would lose a write: not added (ASSUMED unsafe).",
        )
    acknowledge(
        cluster.admin_secret,
        "CKV_AWS_149",
        reason="The admin secret is encrypted with the AWS managed key of Secrets Manager; who may read it is "
        "decided by IAM on its ARN (this Region's provisioner and canary, a spoke's provisioner for the hub's), "
        "which a customer key would have to be shared with across stacks and Regions to add nothing.",
        resource_types=["AWS::SecretsManager::Secret"],
    )
    access_logs = cluster.node.find_child("AccessLogs")
    accept_access_log_bucket_findings(access_logs, receives="the persistent-storage buckets'")


def build_storage(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return StorageStack(scope, plan.id, config=config, plan=plan)
