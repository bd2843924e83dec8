"""How one stack reads another's output: by the name hubspoke.outputs gives it, and only if it is declared there."""

from __future__ import annotations

from functools import cached_property

from aws_cdk import Annotations, Fn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke.config.layout import subnet_layout
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.cross_account import role_arn
from hubspoke.names import link_reader_role_name, peer_role_name
from hubspoke.outputs import (
    ACCELERATOR_SUBNET,
    FLOW_LOG_GROUP,
    PEER_PATH_SECURITY_GROUP,
    PRIVATE_SUBNET,
    VPC_ID,
    Output,
    references,
)
from hubspoke.stacks.base import PlannedStack
from hubspoke.topology import StackPlan, plan_stacks, stack_id


class Inputs:
    """What a stack reads from the other stacks of its environment: weak references, declared in hubspoke.outputs.

    Example::

        inputs = Inputs(stack, config=config)
        vpc_id = inputs.read(stack_id("network", "us-east-2"), VPC_ID)
    """

    def __init__(self, stack: PlannedStack, *, config: HubSpokeConfig) -> None:
        self._stack = stack
        self._config = config
        self._declared = {(r.producer, r.output) for r in references(config) if r.consumer == stack.plan.id}
        self._plans = {p.id: p for p in plan_stacks(config)}

    def read(self, producer: str, output: Output, az_id: str | None = None) -> str:
        """Fn::GetStackOutput of `output` from stack `producer`, across Regions and accounts as needed."""
        name = output.key(az_id)
        consumer = self._stack.plan
        if (producer, name) not in self._declared:
            raise ValueError(
                f"stack {consumer.id} reads output {name} of {producer}, which hubspoke.outputs.references() "
                "does not declare: declare it there, so plan, verify and the output tests know of it"
            )
        source = self._plans[producer]
        region = source.region if source.region != consumer.region else None
        return Fn.get_stack_output(source.name, name, region, self._reader_role(source))

    def _reader_role(self, source: StackPlan) -> str | None:
        """The role in the producer's account that lets this stack's account read it (None: same account)."""
        consumer = self._stack.plan
        if source.account == consumer.account:
            return None
        env = self._config.environment
        hub_account = self._config.account_of(self._config.hub)
        if source.account == hub_account:  # a spoke's stack reads the hub: the hub's peer role for that spoke
            name = peer_role_name(env, consumer.spoke or consumer.region)
        else:  # the hub's Link stack reads the spoke: that spoke's link-reader role
            name = link_reader_role_name(env, source.region)
        return role_arn(self._stack, account=source.account, name=name)


class NetworkView(Construct):
    """The Region's network as another stack of that Region sees it: imported from the Network stack's outputs.

    Example::

        net = NetworkView(stack, "Network", inputs=Inputs(stack, config=config), config=config, region="us-east-2")
        net.vpc, net.private_subnets, net.accelerator_subnet

    Each attribute reads its outputs on first use, so a stack reads only what it uses.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, inputs: Inputs, config: HubSpokeConfig, region: str
    ):
        super().__init__(scope, construct_id)
        self._inputs = inputs
        self._region = config.region_config(region)
        self._network = stack_id("network", region)
        # Route tables belong to the Network and Link stacks; nothing built on this view routes, so the
        # subnets are imported without them (CDK warns when something reads one: none of our templates do).
        Annotations.of(self).acknowledge_warning(
            "@aws-cdk/aws-ec2:noSubnetRouteTableId",
            "Route tables are the Network and Link stacks' business; consumers of this view only place ENIs.",
        )

    def _read(self, output: Output, az_id: str | None = None) -> str:
        return self._inputs.read(self._network, output, az_id)

    @cached_property
    def private_subnets(self) -> list[ec2.ISubnet]:
        return [
            ec2.Subnet.from_subnet_attributes(
                self, f"Private-{az}", subnet_id=self._read(PRIVATE_SUBNET, az), availability_zone=az
            )
            for az in self._region.resolved_az_ids
        ]

    @cached_property
    def vpc(self) -> ec2.IVpc:
        # AZ IDs stand in for AZ names: nothing here places by AZ name, and names differ per account.
        return ec2.Vpc.from_vpc_attributes(
            self,
            "Vpc",
            vpc_id=self._read(VPC_ID),
            vpc_cidr_block=self._region.cidr,
            availability_zones=list(self._region.resolved_az_ids),
            private_subnet_ids=[s.subnet_id for s in self.private_subnets],
        )

    @cached_property
    def accelerator_subnet(self) -> ec2.ISubnet:
        # Its CIDR is config's (the subnet layout), so reading it needs no output.
        return ec2.Subnet.from_subnet_attributes(
            self,
            "Accelerator",
            subnet_id=self._read(ACCELERATOR_SUBNET),
            availability_zone=self._region.resolved_accelerator_az_id,
            ipv4_cidr_block=next(p.cidr for p in subnet_layout(self._region) if p.kind == "accelerator"),
        )

    @cached_property
    def peer_path_security_group(self) -> ec2.ISecurityGroup:
        # Immutable: its rules belong to the Network and Link stacks, never to a stack that only attaches it.
        return ec2.SecurityGroup.from_security_group_id(
            self, "PeerPath", self._read(PEER_PATH_SECURITY_GROUP), mutable=False
        )

    @cached_property
    def flow_log_group(self) -> logs.ILogGroup:
        return logs.LogGroup.from_log_group_name(self, "FlowLogs", self._read(FLOW_LOG_GROUP))
