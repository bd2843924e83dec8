"""How people reach a private EKS cluster: access entries for the configured administrators and an SSM access host.

EKS asks for two things before kubectl works against a private-only endpoint (EKS User Guide, "Cluster API
server endpoint", "Accessing a private only API server"): a network path from inside the VPC, with the control
plane security group admitting port 443 from it, and an access entry for the caller's IAM principal ("Grant IAM
users and roles access to Kubernetes APIs", "Create access entries").
"""

from __future__ import annotations

import hashlib

from aws_cdk import Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from hubspoke.config.schema import ACCESS_HOST_ARCHITECTURES, AccessConfig
from hubspoke.policy.access import ACCESS_HOST_TAG
from hubspoke.policy.acks import acknowledge

# The EKS API server listens on 443 ("Accessing a private only API server": "allow ingress traffic on port 443").
API_PORT = 443
# An EKS access policy, not an IAM policy (EKS User Guide, "Review access policy permissions"): the equivalent of
# Kubernetes' cluster-admin ClusterRole. Administrators install charts, CRDs and cluster roles, submit jobs in any
# namespace and read every node, which the narrower AmazonEKSAdminPolicy (no cluster-scoped writes) refuses.
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# The one type offered that Control Tower's CT.EC2.PR.19 lists as encrypting traffic between instances
# (cdklabs-cdk-validator-cfnguard 0.0.62, ct-ec2-pr-19.guard, /^c7g\..+?$/); the t families are not listed.
ENCRYPTS_BETWEEN_INSTANCES = ("c7g.medium",)
SSM_CORE = "Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore"


def administrator_id(arn: str) -> str:
    """The construct ID of one administrator's access entry: stable for that ARN wherever it is listed."""
    return "Administrator" + hashlib.sha256(arn.encode()).hexdigest()[:12]


class ClusterAccess(Construct):
    """Access entries for `access.administrators` and, when `access.host_enabled`, the SSM access host.

    Example::

        access = ClusterAccess(self, "Access", cluster=plane.cluster, access=config.access, vpc=network.vpc,
                               subnet=network.private_subnets[0])
        access.host.instance_id  # the --target of `aws ssm start-session`
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.Cluster,
        access: AccessConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
    ) -> None:
        super().__init__(scope, construct_id)
        self.entries = [
            eks.AccessEntry(
                self,
                # Named by the principal, not its place in the list: EKS refuses a second entry for a principal
                # and cannot change an entry's principal ("Create access entries"), so an ID that moved with the
                # list would make CloudFormation replace entries (create first) and fail on removing or
                # reordering administrators.
                administrator_id(arn),
                cluster=cluster,  # type: ignore[arg-type]  # jsii stub omits a Cluster member
                principal=arn,
                # STANDARD: the type for people and tools; it may name a principal of another account
                # ("Create access entries").
                access_entry_type=eks.AccessEntryType.STANDARD,
                access_policies=[
                    eks.AccessPolicy.from_access_policy_name(
                        ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                    )
                ],
            )
            for arn in access.administrators
        ]
        self.host: ec2.Instance | None = None
        if access.host_enabled:
            self.host = _access_host(
                self, vpc=vpc, subnet=subnet, instance_type=access.access_host_instance_type
            )
            self.host_security_group = self.host.connections.security_groups[0]
            # Host group to control-plane group on 443 only: EKS attaches its cluster security group to the
            # endpoint's interfaces (EKS User Guide, "View Amazon EKS security group requirements for
            # clusters").
            self.ingress = ec2.CfnSecurityGroupIngress(
                self,
                "EndpointFromAccessHost",
                group_id=cluster.cluster_security_group_id,
                source_security_group_id=self.host_security_group.security_group_id,
                ip_protocol="tcp",
                from_port=API_PORT,
                to_port=API_PORT,
                description="kubectl through the SSM access host (Session Manager port forwarding)",
            )


def _access_host(scope: Construct, *, vpc: ec2.IVpc, subnet: ec2.ISubnet, instance_type: str) -> ec2.Instance:
    """A small instance with no inbound rule that Session Manager forwards a local port through."""
    group = ec2.SecurityGroup(
        scope,
        "HostSecurityGroup",
        vpc=vpc,
        description="SSM access host: no inbound rule; out on 443 to Systems Manager and the EKS endpoint",
        allow_all_outbound=False,
    )
    # SSM Agent's outbound 443 to ssm, ssmmessages and ec2messages (Systems Manager User Guide, "Step 1:
    # Complete Session Manager prerequisites") through the NAT (config/compute_rules.py), and the EKS
    # endpoint's 443.
    group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(API_PORT), "SSM channel and the EKS API endpoint")
    cpu = (
        ec2.AmazonLinuxCpuType.ARM_64
        if ACCESS_HOST_ARCHITECTURES[instance_type] == "arm64"
        else ec2.AmazonLinuxCpuType.X86_64
    )
    host = ec2.Instance(
        scope,
        "Host",
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnets=[subnet]),
        instance_type=ec2.InstanceType(instance_type),
        # Amazon Linux 2023 ships the SSM Agent (Systems Manager User Guide, "Find AMIs with the SSM Agent
        # preinstalled"). The image is AWS's latest at each deploy: a newer one replaces this stateless host.
        machine_image=ec2.MachineImage.latest_amazon_linux2023(cpu_type=cpu),
        security_group=group,
        associate_public_ip_address=False,
        # IMDSv2 only, set on the instance itself: `require_imdsv2` would add a launch template without
        # detailed monitoring, which Control Tower's CT.EC2.PR.10 refuses.
        http_endpoint=True,
        http_tokens=ec2.HttpTokens.REQUIRED,
        # AmazonSSMManagedInstanceCore: what Session Manager needs on the instance profile (Systems Manager
        # User Guide, "Configure instance permissions required for Systems Manager").
        ssm_session_permissions=True,
        detailed_monitoring=True,
        block_devices=[
            ec2.BlockDevice(
                device_name="/dev/xvda",
                volume=ec2.BlockDeviceVolume.ebs(8, encrypted=True, volume_type=ec2.EbsDeviceVolumeType.GP3),
            )
        ],
    )
    # The subnet places the instance. ec2.Instance copies the subnet's availability_zone, which our imported
    # subnets carry as an AZ ID (wiring.NetworkView); AWS::EC2::Instance AvailabilityZone wants a name.
    host.instance.add_property_deletion_override("AvailabilityZone")
    Tags.of(host).add("Name", "hubspoke-access-host")
    # What our policy pack's HubSpoke-AccessHostNoIngress finds the host by.
    Tags.of(host).add(*ACCESS_HOST_TAG)
    acknowledge(
        host,
        "AwsSolutions-IAM4",
        reason="AmazonSSMManagedInstanceCore is the AWS managed policy Systems Manager documents for a node "
        "Session Manager connects to; AWS keeps it in step with what the SSM Agent calls.",
        findings=[SSM_CORE],
    )
    acknowledge(
        host,
        "AwsSolutions-EC29",
        reason="The access host holds no data and no state: replacing or terminating it loses nothing, and "
        "CloudFormation recreates it; termination protection would only block stack updates that replace it.",
    )
    if instance_type not in ENCRYPTS_BETWEEN_INSTANCES:
        acknowledge(
            host,
            "CT.EC2.PR.19",
            reason=f"Everything {instance_type} carries is TLS already: the SSM Agent's channel to Systems Manager "
            "and the forwarded kubectl connection, which kubectl verifies against the cluster's certificate "
            "end to end. An account whose Control Tower hook enforces CT.EC2.PR.19 sets "
            "access.access_host_instance_type: c7g.medium (README, Configuration).",
        )
    return host
