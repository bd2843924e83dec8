"""Hub-side stacks that exist per spoke, so that adding a spoke never changes the hub's own templates."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.cross_account import PeerAccessRole
from hubspoke.constructs.peering import PeerSide
from hubspoke.mtu import peer_mtu_parameters
from hubspoke.outputs import (
    PEER_PATH_SECURITY_GROUP,
    PEERING_CONNECTION,
    PRIVATE_ROUTE_TABLE,
    VPC_ID,
    references,
)
from hubspoke.ports import FROM_SPOKE
from hubspoke.stacks.base import PlannedStack
from hubspoke.stacks.wiring import Inputs
from hubspoke.topology import StackPlan, plan_stacks, stack_id


class LinkStack(PlannedStack):
    """The hub's side of one spoke's peering: routes to the spoke's CIDRs and ingress from them.

    Example::

        LinkStack(stage, "link-us-west-2", config=config, plan=plan)  # deployed after the spoke's Network

    Everything it needs from the hub and the spoke arrives as Fn::GetStackOutput, so neither side's
    template mentions this stack.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        assert plan.spoke is not None
        spoke = config.spoke(plan.spoke)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"hub-side routes and ingress for spoke {spoke.region}"
        )
        inputs = Inputs(self, config=config)
        hub_network = stack_id("network", config.hub.region)
        PeerSide(
            self,
            "ToSpoke",
            peering_id=inputs.read(stack_id("network", spoke.region), PEERING_CONNECTION),
            route_table_ids=[
                (az, inputs.read(hub_network, PRIVATE_ROUTE_TABLE, az))
                for az in route_table_az_ids(config.hub)
            ],
            security_group_id=inputs.read(hub_network, PEER_PATH_SECURITY_GROUP),
            peer_cidrs=spoke.all_cidrs,
            peer_name=f"spoke {spoke.region}",
            ports=FROM_SPOKE,
        )
        # The hub's hosts pin the route MTU towards this spoke from here (hubspoke.mtu), so the hub's own
        # templates stay untouched when spokes come and go.
        for i, (name, value) in enumerate(peer_mtu_parameters(config, spoke)):
            ssm.StringParameter(
                self,
                f"PeerMtu{i}",
                parameter_name=name,
                string_value=value,
                description=f"Route MTU from the hub towards spoke {spoke.region}",
            )


class PeerAccessStack(PlannedStack):
    """The role a spoke in another account assumes to accept its peering into the hub VPC.

    Example::

        PeerAccessStack(stage, "peer-access-us-west-2", config=config, plan=plan)  # only across accounts
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        assert plan.spoke is not None
        spoke = config.spoke(plan.spoke)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"peer role for spoke {spoke.region} (another account)"
        )
        hub = config.hub.region
        plans = {p.id: p for p in plan_stacks(config)}
        # Exactly the hub stacks that this spoke's stacks read with Fn::GetStackOutput and this role.
        readable = sorted(
            {
                plans[ref.producer].name
                for ref in references(config)
                if plans[ref.consumer].region == spoke.region and plans[ref.producer].account == plan.account
            }
        )
        PeerAccessRole(
            self,
            "PeerRole",
            environment=config.environment,
            spoke=spoke.region,
            spoke_account=config.account_of(spoke),
            hub_vpc_id=Inputs(self, config=config).read(stack_id("network", hub), VPC_ID),
            readable_stacks=readable,
        )


def build_link(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return LinkStack(scope, plan.id, config=config, plan=plan)


def build_peer_access(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return PeerAccessStack(scope, plan.id, config=config, plan=plan)
