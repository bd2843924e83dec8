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
from hubspoke.ports import FROM_SPOKE
from hubspoke.stacks.base import PlannedStack, sibling
from hubspoke.stacks.network import NetworkStack
from hubspoke.topology import StackPlan


class LinkStack(PlannedStack):
    """The hub's side of one spoke's peering: routes to the spoke's CIDRs and ingress from them.

    Example::

        LinkStack(stage, "link-us-west-2", config=config, plan=plan)  # deployed after the spoke's Network

    Everything it needs from the hub and the spoke arrives as a weak reference (Fn::GetStackOutput), so
    neither side's template mentions this stack.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        assert plan.spoke is not None
        spoke = config.spoke(plan.spoke)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"hub-side routes and ingress for spoke {spoke.region}"
        )
        hub_network = sibling(scope, NetworkStack, "network", config.hub.region)
        peering_id = sibling(scope, NetworkStack, "network", spoke.region).peering_connection_id
        assert peering_id is not None  # every spoke's Network stack peers to the hub
        PeerSide(
            self,
            "ToSpoke",
            peering_id=peering_id,
            route_table_ids=[
                (az, hub_network.private_route_table_ids[az]) for az in route_table_az_ids(config.hub)
            ],
            security_group_id=hub_network.peer_path_security_group_id,
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

    Reading the hub's outputs needs no role of ours: CDK adds one to each producer read across accounts.

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
        PeerAccessRole(
            self,
            "PeerRole",
            environment=config.environment,
            spoke=spoke.region,
            spoke_account=config.account_of(spoke),
            hub_vpc_id=sibling(scope, NetworkStack, "network", config.hub.region).vpc_id,
        )


def build_link(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return LinkStack(scope, plan.id, config=config, plan=plan)


def build_peer_access(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return PeerAccessStack(scope, plan.id, config=config, plan=plan)
