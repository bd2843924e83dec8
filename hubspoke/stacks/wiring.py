"""A Region's network as the other stacks of that Region use it: CDK passes each value as a weak reference."""

from __future__ import annotations

from functools import cached_property

from aws_cdk import Annotations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke.config.layout import subnet_layout
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.stacks.base import sibling
from hubspoke.stacks.network import NetworkStack


class NetworkView(Construct):
    """The Region's network as another stack of that Region sees it: imported from the Network stack's attributes.

    Example::

        net = NetworkView(stack, "Network", stage=stage, config=config, region="us-east-2")
        net.vpc, net.private_subnets, net.accelerator_subnet

    Each attribute is imported on first use, so a stack reads (and CDK outputs) only what it uses.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, stage: Construct, config: HubSpokeConfig, region: str
    ):
        super().__init__(scope, construct_id)
        self._region = config.region_config(region)
        self._network = sibling(stage, NetworkStack, "network", region)
        # Route tables belong to the Network and Link stacks; nothing built on this view routes, so the
        # subnets are imported without them (CDK warns when something reads one: none of our templates do).
        Annotations.of(self).acknowledge_warning(
            "@aws-cdk/aws-ec2:noSubnetRouteTableId",
            "Route tables are the Network and Link stacks' business; consumers of this view only place ENIs.",
        )

    @cached_property
    def private_subnets(self) -> list[ec2.ISubnet]:
        return [
            ec2.Subnet.from_subnet_attributes(
                self, f"Private-{az}", subnet_id=self._network.private_subnet_ids[az], availability_zone=az
            )
            for az in self._region.resolved_az_ids
        ]

    @cached_property
    def vpc(self) -> ec2.IVpc:
        # AZ IDs stand in for AZ names: nothing here places by AZ name, and names differ per account.
        return ec2.Vpc.from_vpc_attributes(
            self,
            "Vpc",
            vpc_id=self._network.vpc_id,
            vpc_cidr_block=self._region.cidr,
            availability_zones=list(self._region.resolved_az_ids),
            private_subnet_ids=[s.subnet_id for s in self.private_subnets],
        )

    @cached_property
    def accelerator_subnet(self) -> ec2.ISubnet:
        # Its CIDR is config's (the subnet layout), so it needs no reference.
        return ec2.Subnet.from_subnet_attributes(
            self,
            "Accelerator",
            subnet_id=self._network.accelerator_subnet_id,
            availability_zone=self._region.resolved_accelerator_az_id,
            ipv4_cidr_block=next(p.cidr for p in subnet_layout(self._region) if p.kind == "accelerator"),
        )

    @cached_property
    def peer_path_security_group(self) -> ec2.ISecurityGroup:
        # Immutable: its rules belong to the Network and Link stacks, never to a stack that only attaches it.
        return ec2.SecurityGroup.from_security_group_id(
            self, "PeerPath", self._network.peer_path_security_group_id, mutable=False
        )

    @cached_property
    def flow_log_group(self) -> logs.ILogGroup:
        return logs.LogGroup.from_log_group_name(self, "FlowLogs", self._network.flow_log_group_name)
