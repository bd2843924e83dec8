"""Cloud Native Qumulo on AWS: nodes, persistent-storage buckets, key, role, floating IPs and admin secret.

Layout follows Qumulo's CNQ deployments: stock Ubuntu nodes that install Qumulo Core from the Debian
package staged in S3 (Qumulo's CNQ-on-AWS guide), one ENI per node carrying the primary IP plus floating
IPs (secondary private IPs that Qumulo moves between nodes through the EC2 API), data in S3 buckets behind
a customer KMS key, nodes in the same AZ as the Region's accelerators so reads never cross AZs. The floating
IPs are assigned by Custom::CnqFloatingIps, not declared per interface (runtime/floating.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import CfnTag, CustomResource, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hubspoke.cnq_boot import install_names, node_boot_script
from hubspoke.cnq_boot.volumes import node_volumes
from hubspoke.config.schema import QumuloCoreConfig, StorageConfig
from hubspoke.constructs.buckets import events_to_eventbridge
from hubspoke.constructs.cnq.runtime.resources import FLOATING_IPS_RESOURCE, NODE_SHAPE_RESOURCE
from hubspoke.names import CNQ_CLUSTER_TAG

if TYPE_CHECKING:
    from hubspoke.constructs.cnq.provisioning import CnqProvisioner
from hubspoke.constructs.keys import retained_key
from hubspoke.outputs import FLOATING_IPS
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import NFS, QUMULO_PORTAL, QUMULO_REST, RPCBIND, SSH

# Portals use 3713 in both directions on every node; 3712 (ports.QUMULO_REPLICATION) is replication, which
# nothing here uses (Qumulo "Required networking ports"), so it stays closed.
# Qumulo accepts admin passwords with upper, lower, digit and special characters; these would need
# quoting in shells, JSON or URLs, so the generator leaves them out.
PASSWORD_EXCLUDED = " \"'`\\/@$%&*()[]{}<>|;:,?#"
# ENI attributes are only known at deploy time: Qumulo gets them joined, the stack outputs them joined.
FLOATING_IP_SEPARATOR = ","
# Instance metadata by session token only (IMDSv2): the boot script asks for a token first (node/boot.sh, imds).
IMDS_V2_ONLY: dict[str, Any] = {"http_tokens": "required", "http_endpoint": "enabled"}


class CnqCluster(Construct):
    """A Cloud Native Qumulo cluster's AWS resources; the provisioning custom resource forms it.

    Example::

        cluster = CnqCluster(stack, "Cnq", storage=region.storage, name="dev-use2", environment="dev",
                             vpc=net.vpc, subnet=net.accelerator_subnet, client_cidrs=region.all_cidrs,
                             peer_path_sg=net.peer_path_security_group, peer_mtu_path="/hubspoke/dev/peer-mtu/")
        cluster.assign_floating_ips(provisioner)  # then cluster.floating_ips
        cluster.admin_secret, cluster.object_storage_uris
        cluster.refuse_reshaping(provisioner)

    Buckets, key, secret and node volumes are retained when the stack is deleted or they are replaced.
    The nodes boot the image pinned in config and install the configured Qumulo Core release (node/boot.sh);
    their first-boot script names only config-derived things, so no deploy changes it under a running node.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: StorageConfig,
        name: str,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        client_cidrs: Sequence[str],
        peer_path_sg: ec2.ISecurityGroup,
        environment: str,
        peer_mtu_path: str,
        published_peer_routes: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        if storage.ami_id is None or storage.qumulo_core is None:
            raise ValueError("storage.ami_id and storage.qumulo_core are required (config/storage_rules.py)")
        self.name = name
        self.storage = storage
        self.key = retained_key(self, "Key", description=f"CNQ {name}: persistent storage and node volumes")
        # Kept on update and delete, but deleted (scheduled) when the create that made it rolls back (CloudFormation
        # Template Reference, "DeletionPolicy attribute", RetainExceptOnCreate): a failed first create then leaves
        # no key billed; what it encrypted belonged to a cluster that never formed. Same for the admin secret.
        self.key.apply_removal_policy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
        self.buckets = self._buckets(storage.buckets)
        self.object_storage_uris = [f"https://{b.bucket_regional_domain_name}/" for b in self.buckets]
        self.admin_secret = secretsmanager.Secret(
            self,
            "AdminPassword",
            description=f"CNQ {name}: admin password, set at cluster formation",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=24, exclude_characters=PASSWORD_EXCLUDED, require_each_included_type=True
            ),
            removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        )
        acknowledge(
            self.admin_secret,
            "AwsSolutions-SMG4",
            reason="the password is Qumulo's own admin credential: a Secrets Manager rotation would change the "
            "secret without changing the cluster and lock the provisioner out; rotate with qq change_password, "
            "then update the secret (docs/runbooks/portal.md)",
        )
        self.security_group = self._security_group(vpc, client_cidrs, storage.admin_cidr)
        self.role = self._role()
        boot_inputs = self._install_access(
            storage.qumulo_core, install_names(environment, name), peer_mtu_path, published_peer_routes
        )
        self.volumes = node_volumes(storage)
        script = node_boot_script(
            storage,
            region=Stack.of(self).region,
            environment=environment,
            cluster=name,
            peer_mtu_path=peer_mtu_path,
        )
        self.user_data_sha256 = hashlib.sha256(script.encode()).hexdigest()
        self.subnet_id = subnet.subnet_id
        user_data = Fn.base64(script)
        profile = iam.CfnInstanceProfile(self, "Profile", roles=[self.role.role_name])
        volumes = self._node_volumes()
        self.node_ips: list[str] = []
        self.node_instance_ids: list[str] = []
        self.nodes: list[ec2.CfnInstance] = []
        enis: list[ec2.CfnNetworkInterface] = []
        for index in range(1, storage.node_count + 1):
            eni = ec2.CfnNetworkInterface(
                self,
                f"Node{index}Eni",
                subnet_id=subnet.subnet_id,
                group_set=[self.security_group.security_group_id, peer_path_sg.security_group_id],
                # No SecondaryPrivateIpAddressCount: Qumulo moves the floating IPs between interfaces, so the
                # count is not CloudFormation's to reconcile (runtime/floating.py, Custom::CnqFloatingIps).
                description=f"CNQ {name} node {index}: primary and floating IPs",
            )
            node = ec2.CfnInstance(
                self,
                f"Node{index}",
                # A literal ID from config: a deploy-time lookup would re-resolve on every update.
                image_id=storage.ami_id,
                instance_type=storage.instance_type,
                iam_instance_profile=profile.ref,
                user_data=user_data,
                network_interfaces=[
                    # Fn::GetAtt Id rather than Ref: the same ENI, and what Control Tower's CT.EC2.PR.8 reads
                    # as "an existing interface" (a public IP can only go on a new one).
                    ec2.CfnInstance.NetworkInterfaceProperty(
                        device_index="0", network_interface_id=eni.attr_id
                    )
                ],
                metadata_options=ec2.CfnInstance.MetadataOptionsProperty(
                    **IMDS_V2_ONLY, http_put_response_hop_limit=storage.imds_hop_limit
                ),
                launch_template=ec2.CfnInstance.LaunchTemplateSpecificationProperty(
                    launch_template_id=volumes.ref, version=volumes.attr_latest_version_number
                ),
                # No DisableApiTermination here: a protected node could not be rolled back after a failed
                # first create. The Storage stack protects them as its last step (Custom::CnqNodeProtection).
                monitoring=True,
                tags=[
                    CfnTag(key="Name", value=f"{name}-node{index}"),
                    CfnTag(key=CNQ_CLUSTER_TAG, value=name),
                ],
            )
            # The first boot reads the install parameter and the S3 prefix through the role's policy.
            node.node.add_dependency(self.role, *boot_inputs)
            acknowledge(
                node,
                "AwsSolutions-EC29",
                reason="termination protection is switched on as the Storage stack's last step (NodeProtection): a "
                "node protected at create could not be terminated when a failed first create rolls back",
            )
            self.node_ips.append(eni.attr_primary_private_ip_address)
            self.node_instance_ids.append(node.ref)
            self.nodes.append(node)
            enis.append(eni)
        self.enis = enis
        self._grant_floating_ip_moves(enis)
        # Set by assign_floating_ips, once the provisioner exists.
        self.floating_ips_joined: str = ""
        self.floating_ips: list[str] = []

    def assign_floating_ips(self, provisioner: CnqProvisioner) -> CustomResource:
        """The floating IPs, assigned to each interface when it is new and never reconciled per interface
        (Custom::CnqFloatingIps, runtime/floating.py); sets floating_ips and floating_ips_joined."""
        stack = Stack.of(self)
        assign = provisioner.resource(
            self,
            "FloatingIps",
            resource_type=FLOATING_IPS_RESOURCE,
            properties={
                "ClusterName": self.name,
                "NetworkInterfaceIds": [eni.attr_id for eni in self.enis],
                "Counts": [str(self.storage.floating_ips_on_node(i)) for i in range(len(self.enis))],
                # The stack's output of these addresses: its order is kept, and an address it lists that an
                # interface update released is assigned back (runtime/floating.py).
                "PublishedOutput": FLOATING_IPS.key(),
            },
        )
        provisioner.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ec2:AssignPrivateIpAddresses"],
                resources=[
                    stack.format_arn(service="ec2", resource="network-interface", resource_name=eni.ref)
                    for eni in self.enis
                ],
            )
        )
        # Describe calls have no resource-level permissions in EC2.
        provisioner.function.add_to_role_policy(
            iam.PolicyStatement(actions=["ec2:DescribeNetworkInterfaces"], resources=["*"])
        )
        self.floating_ips_joined = assign.get_att_string("Addresses")
        self.floating_ips = Fn.split(FLOATING_IP_SEPARATOR, self.floating_ips_joined)
        return assign

    def refuse_reshaping(self, provisioner: CnqProvisioner) -> CustomResource:
        """A guard every node depends on: it fails an update that would replace or stop all nodes at once.

        It carries every node property whose change CloudFormation applies by replacing or stopping the
        instance (ImageId, BlockDeviceMappings and the ENI's subnet: replacement; InstanceType and
        UserData: stop and start), and compares them with what the running nodes have (runtime/shape.py).
        """
        # Through the provisioner, so the guard carries its WaitSeconds budget like every resource it serves
        # (the handler's default otherwise, which the waiter rule, hubspoke/policy/waiters.py, cannot see).
        guard = provisioner.resource(
            self,
            "NodeShape",
            resource_type=NODE_SHAPE_RESOURCE,
            properties={
                "ClusterName": self.name,
                "ImageId": self.storage.ami_id,
                "InstanceType": self.storage.instance_type,
                "UserDataSha256": self.user_data_sha256,
                "BlockDevices": json.dumps([v.shape() for v in self.volumes], sort_keys=True),
                "SubnetId": self.subnet_id,
            },
        )
        for node in self.nodes:
            node.node.add_dependency(guard)
        # Buckets too: a deploy the guard refuses must not first create buckets (a raised bucket_count, or
        # Qumulo's default of 16 reaching a cluster made with 4) that its rollback would leave behind,
        # retained and empty, on every retry. Retain stays, not RetainExceptOnCreate (CloudFormation Template
        # Reference, "DeletionPolicy attribute": deleted when the operation that created the resource rolls
        # back): a failure after add_object_storage_uris would delete buckets Qumulo already writes to.
        # ASSUMED: a DependsOn added to an existing bucket changes no property, so CloudFormation updates nothing.
        for bucket in self.buckets:
            bucket.node.add_dependency(guard)
        return guard

    def _node_volumes(self) -> ec2.CfnLaunchTemplate:
        """The nodes' EBS volumes (node/volumes.py) as a launch template: AWS::EC2::Instance's own block-device
        mapping has no Throughput, which Qumulo sets for gp3 caches (CloudFormation resource reference,
        AWS::EC2::Instance Ebs vs AWS::EC2::LaunchTemplate Ebs)."""
        tags = [
            CfnTag(key="Name", value=f"{self.name}-node-volume"),
            CfnTag(key=CNQ_CLUSTER_TAG, value=self.name),
        ]
        return ec2.CfnLaunchTemplate(
            self,
            "NodeVolumes",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name=volume.device,
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            volume_size=volume.size_gib,
                            volume_type=volume.type,
                            iops=volume.iops,
                            throughput=volume.throughput_mibps,
                            encrypted=True,
                            kms_key_id=self.key.key_arn,
                            # The volume outlives its instance: replacing or deleting a node keeps it.
                            delete_on_termination=False,
                        ),
                    )
                    for volume in self.volumes
                ],
                # As the nodes set them: Control Tower (CT.EC2.PR.1, PR.10) judges a launch template alone.
                # Not the hop limit: a new launch-template version is a new LaunchTemplate.Version on every
                # node (CloudFormation, AWS::EC2::Instance LaunchTemplateSpecification: LaunchTemplateId "Update
                # requires: Replacement"; ASSUMED no gentler for Version), so the nodes' MetadataOptions carry it.
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(**IMDS_V2_ONLY),
                monitoring=ec2.CfnLaunchTemplate.MonitoringProperty(enabled=True),
                # Retained volumes stay findable by cluster after the stack is gone (teardown.md).
                tag_specifications=[
                    ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type="volume", tags=tags)
                ],
            ),
        )

    def _install_access(
        self,
        core: QumuloCoreConfig,
        names: dict[str, str],
        peer_mtu_path: str,
        published: Sequence[tuple[str, str]],
    ) -> list[Construct]:
        """What the first boot reads (the release to install, the peer routes) under `names` (node.install_names),
        and the role's read-only access to it."""
        stack = Stack.of(self)
        install = ssm.StringParameter(
            self,
            "QumuloCoreInstall",
            parameter_name=names["install_parameter"],
            string_value=f"{core.package_uri} {core.version}",
            description=f"CNQ {self.name}: the staged Qumulo Core package and its release",
        )
        log_group = logs.LogGroup(
            self,
            "InstallLogs",
            log_group_name=names["log_group"],
            retention=logs.RetentionDays.ONE_YEAR,
            removal_policy=RemovalPolicy.DESTROY,
        )
        routes = [
            ssm.StringParameter(self, f"PeerMtu{i}", parameter_name=n, string_value=v,
                                description=f"Route MTU from CNQ {self.name} towards a peer VPC")
            for i, (n, v) in enumerate(published)
        ]  # fmt: skip
        package_folder = core.package_key.rsplit("/", 1)[0]
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[f"arn:{stack.partition}:s3:::{core.bucket}/{package_folder}/*"],
            )
        )
        install.grant_read(self.role)
        path = peer_mtu_path.strip("/")
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ssm:GetParametersByPath"],
                resources=[
                    stack.format_arn(service="ssm", resource="parameter", resource_name=path + suffix)
                    for suffix in ("", "/*")
                ],
            )
        )
        log_group.grant_write(self.role)
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            reason="the first boot reads the one staged release's folder (read-only, one version) and the peer "
            "routes published under one SSM path per environment, which spokes add to and remove from",
            findings=[
                f"Resource::arn:<AWS::Partition>:s3:::{core.bucket}/{package_folder}/*",
                f"Resource::arn:<AWS::Partition>:ssm:{stack.region}:{stack.account}:parameter/{path}/*",
            ],
        )
        return [install, log_group, *routes]

    def _buckets(self, count: int) -> list[s3.Bucket]:
        logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # server access logs cannot target a KMS-encrypted bucket
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
            # The rule clears abandoned multipart uploads only, which no reader of the logs needs (whether S3's
            # log delivery ever uploads in parts is not documented); it is the enabled lifecycle rule Control
            # Tower's CT.S3.PR.6 asks for. Expiry of the logs is the account owner's.
            lifecycle_rules=[s3.LifecycleRule(abort_incomplete_multipart_upload_after=Duration.days(7))],
        )
        acknowledge(
            logs,
            "AwsSolutions-S1",
            reason="this bucket receives the persistent-storage buckets' access logs; logging it into itself "
            "would loop and logging it elsewhere only moves the question",
        )
        block_all = s3.BlockPublicAccess.BLOCK_ALL  # one kernel call, not one per bucket
        buckets = [
            s3.Bucket(
                self,
                f"PersistentStorage{index}",
                encryption=s3.BucketEncryption.KMS,
                encryption_key=self.key,
                bucket_key_enabled=True,
                enforce_ssl=True,
                block_public_access=block_all,
                server_access_logs_bucket=logs,
                server_access_logs_prefix=f"persistent-storage-{index}/",
                # Retain, not RetainExceptOnCreate: Qumulo writes to its buckets from formation on, and S3 deletes
                # only an empty bucket (S3 API Reference, DeleteBucket), so a first create failing after formation
                # would end in ROLLBACK_FAILED; a kept bucket's generated name never blocks the retry.
                removal_policy=RemovalPolicy.RETAIN,
            )
            for index in range(1, count + 1)
        ]
        for bucket in (logs, *buckets):
            events_to_eventbridge(bucket)
        return buckets

    def _security_group(
        self, vpc: ec2.IVpc, client_cidrs: Sequence[str], admin_cidr: str | None
    ) -> ec2.SecurityGroup:
        sg = ec2.SecurityGroup(
            self,
            "Nodes",
            vpc=vpc,
            description=f"CNQ {self.name}: Qumulo ports from its own VPC",
            allow_all_outbound=True,
        )
        # Qumulo nodes talk to each other on many ports (quorum, protection, metadata): all of it, node to node.
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "Qumulo inter-node traffic")
        for cidr in client_cidrs:
            peer = ec2.Peer.ipv4(cidr)
            for port, label in ((ec2.Port.tcp(NFS), "NFS"), (ec2.Port.udp(NFS), "NFS over UDP"),
                                (ec2.Port.tcp(RPCBIND), "rpcbind"), (ec2.Port.udp(RPCBIND), "rpcbind over UDP"),
                                (ec2.Port.tcp(QUMULO_PORTAL), "Qumulo portal"),
                                (ec2.Port.tcp(QUMULO_REST), "Qumulo REST API")):  # fmt: skip
                sg.add_ingress_rule(peer, port, f"{label} from the VPC")
        if admin_cidr:
            sg.add_ingress_rule(ec2.Peer.ipv4(admin_cidr), ec2.Port.tcp(SSH), "SSH from the admin CIDR")
            sg.add_ingress_rule(
                ec2.Peer.ipv4(admin_cidr), ec2.Port.tcp(QUMULO_REST), "REST from the admin CIDR"
            )
        return sg

    def _role(self) -> iam.Role:
        role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"CNQ {self.name} nodes",
        )
        # grant_read_write's s3:List* and s3:Abort* include the multipart-upload actions Qumulo uses
        # (ListBucketMultipartUploads, ListMultipartUploadParts, AbortMultipartUpload). With Qumulo's 16 or
        # more buckets the statements outgrow the role's inline policy and CDK moves the rest into managed
        # "overflow" policies of the same role.
        for bucket in self.buckets:
            bucket.grant_read_write(role)
            self._grant_in_bucket_policy(bucket, role)
        self.key.grant_encrypt_decrypt(role)
        return role

    @staticmethod
    def _grant_in_bucket_policy(bucket: s3.Bucket, role: iam.Role) -> None:
        """The nodes' access to `bucket` in the bucket's own policy, retained: the role's policy is the stack's
        to change, so rolling back the update that added a bucket would take that grant away while Qumulo
        writes to the bucket; a retained bucket policy stays as long as the bucket. Either policy suffices in one
        account (IAM User Guide, "Policy evaluation for requests within a single account": "If either the
        identity-based policy or the resource-based policy within the same account allows the request ... the
        request is still allowed")."""
        bucket.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ArnPrincipal(role.role_arn)],
                # What grant_read_write gives the role (the multipart-upload actions Qumulo uses included).
                actions=[
                    "s3:GetObject*",
                    "s3:GetBucket*",
                    "s3:List*",
                    "s3:DeleteObject*",
                    "s3:PutObject",
                    "s3:PutObjectLegalHold",
                    "s3:PutObjectRetention",
                    "s3:PutObjectTagging",
                    "s3:PutObjectVersionTagging",
                    "s3:Abort*",
                ],
                resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
            )
        )
        if bucket.policy is not None:
            bucket.policy.apply_removal_policy(RemovalPolicy.RETAIN)

    def _grant_floating_ip_moves(self, enis: Sequence[ec2.CfnNetworkInterface]) -> None:
        stack = Stack.of(self)
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"],
                resources=[
                    stack.format_arn(service="ec2", resource="network-interface", resource_name=eni.ref)
                    for eni in enis
                ],
            )
        )
        # Describe calls have no resource-level permissions in EC2.
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ec2:DescribeInstances", "ec2:DescribeNetworkInterfaces"], resources=["*"]
            )
        )
        buckets = [stack.get_logical_id(b.node.default_child) for b in self.buckets]  # type: ignore[arg-type]
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            reason="object-level S3 actions need bucket/* on the cluster's own buckets, KMS data-key actions are "
            "GenerateDataKey*/ReEncrypt* on the cluster's own key, and EC2 Describe* has no resource-level scope",
            findings=[
                *(
                    f"Action::{a}"
                    for a in (
                        "kms:GenerateDataKey*",
                        "kms:ReEncrypt*",
                        "s3:Abort*",
                        "s3:DeleteObject*",
                        "s3:GetBucket*",
                        "s3:GetObject*",
                        "s3:List*",
                    )
                ),
                "Resource::*",
                *(f"Resource::<{b}.Arn>/*" for b in buckets),
            ],
        )
