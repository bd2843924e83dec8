"""A VPC laid out from config with subnets pinned to AZ IDs (not names), so synth needs no lookup."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke.config.layout import SubnetPlan, route_table_az_ids, subnet_layout
from hubspoke.config.schema import RegionConfig


class RegionVpc(Construct):
    """The Region's VPC: accelerator and private subnets per AZ ID, optional NAT, S3 endpoint, flow logs.

    Example::

        net = RegionVpc(stack, "Vpc", region=config.hub)
        net.private_route_tables  # {az_id: CfnRouteTable}, where peering routes go

    L1 resources on purpose: ec2.Vpc takes AZ names, which differ per account and need a lookup;
    AWS::EC2::Subnet accepts AvailabilityZoneId directly.
    """

    def __init__(self, scope: Construct, construct_id: str, *, region: RegionConfig) -> None:
        super().__init__(scope, construct_id)
        self.region = region
        self.cfn_vpc = ec2.CfnVPC(
            self, "Vpc", cidr_block=region.cidr, enable_dns_hostnames=True, enable_dns_support=True
        )
        vpc_id = self.cfn_vpc.ref
        secondary = [
            ec2.CfnVPCCidrBlock(self, f"Cidr{i}", vpc_id=vpc_id, cidr_block=cidr)
            for i, cidr in enumerate(region.secondary_cidrs)
        ]
        layout = subnet_layout(region)
        # One private route table per AZ: NAT (when per AZ) and peering routes are per AZ anyway.
        self.private_route_tables: dict[str, ec2.CfnRouteTable] = {
            az: ec2.CfnRouteTable(self, f"PrivateRoutes-{az}", vpc_id=vpc_id)
            for az in route_table_az_ids(region)
        }
        self.subnets: dict[str, ec2.CfnSubnet] = {}
        for plan in layout:
            subnet = self._subnet(plan)
            for block in secondary:
                subnet.node.add_dependency(block)
            if plan.kind != "public":
                ec2.CfnSubnetRouteTableAssociation(
                    self,
                    f"{plan.name}-Routes",
                    subnet_id=subnet.ref,
                    route_table_id=self.private_route_tables[plan.az_id].ref,
                )
        self._egress([p for p in layout if p.kind == "public"])
        self.s3_endpoint = ec2.CfnVPCEndpoint(
            self,
            "S3Endpoint",
            vpc_id=vpc_id,
            service_name=f"com.amazonaws.{region.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.ref for rt in self.private_route_tables.values()],
        )
        self.flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=_retention(region.flow_logs_retention_days),
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.vpc = ec2.Vpc.from_vpc_attributes(
            self,
            "Imported",
            vpc_id=vpc_id,
            vpc_cidr_block=region.cidr,
            availability_zones=list(region.resolved_az_ids),
            private_subnet_ids=[self.subnets[f"private-{az}"].ref for az in region.resolved_az_ids],
            private_subnet_route_table_ids=[
                self.private_route_tables[az].ref for az in region.resolved_az_ids
            ],
        )
        flow_log = ec2.FlowLog(
            self,
            "FlowLog",
            resource_type=ec2.FlowLogResourceType.from_vpc(self.vpc),
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
            # Records cover at most 1 minute instead of the default 10 (VPC User Guide, "Aggregation
            # interval"): the derived hit ratio divides byte counts logged at different interfaces, and
            # 10-minute records land whole in one 5-minute period and not the next, making the ratio jump.
            max_aggregation_interval=ec2.FlowLogMaxAggregationInterval.ONE_MINUTE,
        )
        # Delivery runs as the role; its policy is created before and deleted after the flow log
        # (tests/test_role_grant_order.py).
        if flow_log.iam_role is not None:
            flow_log.node.find_child("FlowLog").node.add_dependency(flow_log.iam_role)
        accel = region.resolved_accelerator_az_id
        self.accelerator_subnet = ec2.Subnet.from_subnet_attributes(
            self,
            "AcceleratorSubnet",
            subnet_id=self.subnets[f"accelerator-{accel}"].ref,
            availability_zone=accel,
            route_table_id=self.private_route_tables[accel].ref,
            ipv4_cidr_block=next(p.cidr for p in layout if p.kind == "accelerator"),
        )

    def _subnet(self, plan: SubnetPlan) -> ec2.CfnSubnet:
        subnet = ec2.CfnSubnet(
            self,
            plan.name,
            vpc_id=self.cfn_vpc.ref,
            cidr_block=plan.cidr,
            availability_zone_id=plan.az_id,
            map_public_ip_on_launch=False,
        )
        Tags.of(subnet).add("Name", f"{plan.kind}-{plan.az_id}")
        Tags.of(subnet).add("hubspoke:subnet", plan.kind)
        self.subnets[plan.name] = subnet
        return subnet

    def _egress(self, public: list[SubnetPlan]) -> None:
        if not public:
            return
        igw = ec2.CfnInternetGateway(self, "InternetGateway")
        attach = ec2.CfnVPCGatewayAttachment(
            self, "InternetGatewayAttachment", vpc_id=self.cfn_vpc.ref, internet_gateway_id=igw.ref
        )
        public_routes = ec2.CfnRouteTable(self, "PublicRoutes", vpc_id=self.cfn_vpc.ref)
        default = ec2.CfnRoute(
            self,
            "PublicDefault",
            route_table_id=public_routes.ref,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.ref,
        )
        default.node.add_dependency(attach)
        nat_subnets = public if self.region.nat == "per_az" else public[:1]
        nats: dict[str, ec2.CfnNatGateway] = {}
        for plan in public:
            ec2.CfnSubnetRouteTableAssociation(
                self,
                f"{plan.name}-Routes",
                subnet_id=self.subnets[plan.name].ref,
                route_table_id=public_routes.ref,
            )
        for plan in nat_subnets:
            eip = ec2.CfnEIP(self, f"NatIp-{plan.az_id}", domain="vpc")
            eip.node.add_dependency(attach)
            nats[plan.az_id] = ec2.CfnNatGateway(
                self,
                f"Nat-{plan.az_id}",
                subnet_id=self.subnets[plan.name].ref,
                allocation_id=eip.attr_allocation_id,
            )
        first = next(iter(nats.values()))
        for az, table in self.private_route_tables.items():
            ec2.CfnRoute(
                self,
                f"PrivateDefault-{az}",
                route_table_id=table.ref,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nats.get(az, first).ref,
            )


_RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


def _retention(days: int) -> logs.RetentionDays:
    return _RETENTION[days]
