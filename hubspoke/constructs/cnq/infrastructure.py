"""Cloud Native Qumulo on AWS: nodes, persistent-storage buckets, key, role, floating IPs and admin secret.

Layout follows Qumulo's CNQ deployments: one ENI per node carrying the primary IP plus floating IPs
(secondary private IPs that Qumulo moves between nodes through the EC2 API), data in S3 buckets behind
a customer KMS key, nodes in the same AZ as the Region's accelerators so reads never cross AZs.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnParameter, CfnTag, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from hubspoke.config.schema import StorageConfig
from hubspoke.constructs.keys import retained_key
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import NFS, QUMULO_PORTAL, QUMULO_REPLICATION, QUMULO_REST, RPCBIND, SSH

# Room for Qumulo Core, its logs and upgrade packages; the cluster's data lives in S3 and the cache.
ROOT_VOLUME_GIB = 256
# Qumulo accepts admin passwords with upper, lower, digit and special characters; these would need
# quoting in shells, JSON or URLs, so the generator leaves them out.
PASSWORD_EXCLUDED = " \"'`\\/@$%&*()[]{}<>|;:,?#"
# ENI attributes are only known at deploy time: Qumulo gets them joined, the stack outputs them joined.
FLOATING_IP_SEPARATOR = ","
_REGION_WORDS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c", "northeast": "ne",
                 "southeast": "se", "northwest": "nw", "southwest": "sw"}  # fmt: skip


def cluster_name(environment: str, region: str) -> str:
    """A Qumulo cluster name (2 to 15 characters, letters, digits and inner dashes): dev-use2, prod-apse1."""
    parts = region.split("-")
    short = parts[0] + "".join(_REGION_WORDS.get(p, p[:1]) for p in parts[1:-1]) + parts[-1]
    return f"{environment[: 14 - len(short)].rstrip('-')}-{short}"


class CnqCluster(Construct):
    """A Cloud Native Qumulo cluster's AWS resources; the provisioning custom resource forms it.

    Example::

        cluster = CnqCluster(stack, "Cnq", storage=region.storage, name="dev-use2", vpc=net.vpc,
                             subnet=net.accelerator_subnet, client_cidrs=region.all_cidrs,
                             peer_path_sg=net.peer_path_security_group)
        cluster.floating_ips, cluster.admin_secret, cluster.object_storage_uris

    Buckets, key, secret and node volumes are retained when the stack is deleted or they are replaced.
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
    ) -> None:
        super().__init__(scope, construct_id)
        self.name = name
        self.key = retained_key(self, "Key", description=f"CNQ {name}: persistent storage and node volumes")
        self.buckets = self._buckets(storage.bucket_count)
        self.object_storage_uris = [f"https://{b.bucket_regional_domain_name}/" for b in self.buckets]
        self.admin_secret = secretsmanager.Secret(
            self,
            "AdminPassword",
            description=f"CNQ {name}: admin password, set at cluster formation",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=24, exclude_characters=PASSWORD_EXCLUDED, require_each_included_type=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
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
        image_id = (
            storage.ami_id
            or CfnParameter(
                self,
                "QumuloAmi",
                type="AWS::EC2::Image::Id",
                description=f"Qumulo AMI for {name} (set storage.ami_id in the config to fix it at synth)",
            ).value_as_string
        )
        profile = iam.CfnInstanceProfile(self, "Profile", roles=[self.role.role_name])
        self.node_ips: list[str] = []
        self.node_instance_ids: list[str] = []
        floating: list[str] = []
        enis: list[ec2.CfnNetworkInterface] = []
        for index in range(1, storage.node_count + 1):
            eni = ec2.CfnNetworkInterface(
                self,
                f"Node{index}Eni",
                subnet_id=subnet.subnet_id,
                group_set=[self.security_group.security_group_id, peer_path_sg.security_group_id],
                secondary_private_ip_address_count=storage.floating_ips_per_node,
                description=f"CNQ {name} node {index}: primary and floating IPs",
            )
            node = ec2.CfnInstance(
                self,
                f"Node{index}",
                image_id=image_id,
                instance_type=storage.instance_type,
                iam_instance_profile=profile.ref,
                network_interfaces=[
                    # Fn::GetAtt Id rather than Ref: the same ENI, and what Control Tower's CT.EC2.PR.8 reads
                    # as "an existing interface" (a public IP can only go on a new one).
                    ec2.CfnInstance.NetworkInterfaceProperty(
                        device_index="0", network_interface_id=eni.attr_id
                    )
                ],
                metadata_options=ec2.CfnInstance.MetadataOptionsProperty(
                    http_tokens="required", http_endpoint="enabled"
                ),
                block_device_mappings=[
                    ec2.CfnInstance.BlockDeviceMappingProperty(
                        device_name="/dev/sda1",
                        ebs=ec2.CfnInstance.EbsProperty(
                            volume_size=ROOT_VOLUME_GIB,
                            volume_type="gp3",
                            encrypted=True,
                            kms_key_id=self.key.key_arn,
                            # The volume outlives its instance: replacing or deleting a node keeps it.
                            delete_on_termination=False,
                        ),
                    )
                ],
                # Qumulo's own deployments protect nodes the same way; the runbook says how to lift it.
                disable_api_termination=True,
                monitoring=True,
                tags=[CfnTag(key="Name", value=f"{name}-node{index}")],
            )
            self.node_ips.append(eni.attr_primary_private_ip_address)
            self.node_instance_ids.append(node.ref)
            floating.append(Fn.join(FLOATING_IP_SEPARATOR, eni.attr_secondary_private_ip_addresses))
            enis.append(eni)
        self.floating_ips_joined = Fn.join(FLOATING_IP_SEPARATOR, floating)
        self.floating_ips = Fn.split(FLOATING_IP_SEPARATOR, self.floating_ips_joined)
        self._grant_floating_ip_moves(enis)

    def _buckets(self, count: int) -> list[s3.Bucket]:
        logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # server access logs cannot target a KMS-encrypted bucket
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            logs,
            "AwsSolutions-S1",
            reason="this bucket receives the persistent-storage buckets' access logs; logging it into itself "
            "would loop and logging it elsewhere only moves the question",
        )
        return [
            s3.Bucket(
                self,
                f"PersistentStorage{index}",
                encryption=s3.BucketEncryption.KMS,
                encryption_key=self.key,
                bucket_key_enabled=True,
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                server_access_logs_bucket=logs,
                server_access_logs_prefix=f"persistent-storage-{index}/",
                removal_policy=RemovalPolicy.RETAIN,
            )
            for index in range(1, count + 1)
        ]

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
                                (ec2.Port.tcp(QUMULO_REPLICATION), "Qumulo replication"),
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
        for bucket in self.buckets:
            bucket.grant_read_write(role)
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=[
                        "s3:ListBucketMultipartUploads",
                        "s3:ListMultipartUploadParts",
                        "s3:AbortMultipartUpload",
                    ],
                    resources=[bucket.bucket_arn, bucket.arn_for_objects("*")],
                )
            )
        self.key.grant_encrypt_decrypt(role)
        return role

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
