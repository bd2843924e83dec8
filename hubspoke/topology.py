"""Which stacks an environment has, where each deploys, and in what order. No CDK: plan and synth share it.

Order (docs/design.md §3): hub Network -> per spoke: [PeerAccess, when accounts differ] -> spoke Network
(peering) -> Link (hub side of that spoke) -> Storage (hub, then spokes) -> Compute -> Ops. The hub's
own stacks never depend on a spoke, so adding a spoke adds stacks and changes none, except the one
environment-wide dashboard, whose purpose is to show every Region.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hubspoke import names
from hubspoke.config.schema import HubSpokeConfig, RegionConfig

# Tags every stack carries (stage.py); `hubspoke preflight` recognizes the environment's own VPCs by them.
ENVIRONMENT_TAG = "hubspoke:environment"
REGION_TAG = "hubspoke:region"
STACK_TAG = "hubspoke:stack"

StackKind = Literal["network", "peer-access", "link", "storage", "compute", "ops", "dashboard"]

_HOLDS: dict[StackKind, str] = {
    "network": "VPC, subnets, NAT, S3 endpoint, flow logs, cross-Region security group",
    "peer-access": "IAM role the spoke account assumes to accept the peering and read hub outputs",
    "link": "hub-side routes and security-group ingress for one spoke",
    "storage": "Cloud Native Qumulo cluster",
    "compute": "EKS and SageMaker HyperPod cluster, Kubernetes storage",
    "ops": "hub-outage canary, alarms",
    "dashboard": "one CloudWatch dashboard for the environment: every Region side by side",
}


@dataclass(frozen=True)
class StackPlan:
    """One CloudFormation stack of an environment."""

    kind: StackKind
    region: str
    account: str
    # For per-spoke stacks that live in the hub Region (peer-access, link): the spoke they serve.
    spoke: str | None = None
    depends_on: tuple[str, ...] = ()
    environment: str = ""

    @property
    def id(self) -> str:
        """Construct id inside the environment's Stage; also the CLI's stack selector suffix."""
        return stack_id(self.kind, self.spoke or self.region)

    @property
    def name(self) -> str:
        """CloudFormation stack name: unique per account and Region, stable across synths."""
        return names.stack_name(self.environment, self.id)

    @property
    def holds(self) -> str:
        return _HOLDS[self.kind]


def stage_id(config: HubSpokeConfig) -> str:
    return names.environment_prefix(config.environment)


def stack_id(kind: StackKind, region_or_spoke: str) -> str:
    """A stack's id in its Stage: its kind and the Region it serves (a hub-side per-spoke stack: the spoke's)."""
    return f"{kind}-{region_or_spoke}"


def stack_name(config: HubSpokeConfig, kind: StackKind, region_or_spoke: str) -> str:
    """The CloudFormation name of the stack `stack_id(kind, region_or_spoke)` of this environment."""
    return names.stack_name(config.environment, stack_id(kind, region_or_spoke))


def cross_account(config: HubSpokeConfig, spoke: RegionConfig) -> bool:
    return config.account_of(spoke) != config.account_of(config.hub)


def plan_stacks(config: HubSpokeConfig) -> list[StackPlan]:
    """Every stack of the environment, in an order that `cdk deploy` can follow one by one."""
    env = config.environment
    hub = config.hub
    hub_account = config.account_of(hub)
    plans: list[StackPlan] = []

    def add(
        kind: StackKind, region: RegionConfig, spoke: str | None = None, deps: tuple[str, ...] = ()
    ) -> str:
        account = hub_account if spoke else config.account_of(region)
        plan = StackPlan(kind, region.region, account, spoke, deps, env)
        plans.append(plan)
        return plan.id

    hub_net = add("network", hub)
    for spoke in config.spokes:
        deps: tuple[str, ...] = (hub_net,)
        if cross_account(config, spoke):
            deps += (add("peer-access", hub, spoke.region, (hub_net,)),)
        spoke_net = add("network", spoke, deps=deps)
        add("link", hub, spoke.region, (hub_net, spoke_net))

    hub_storage = add("storage", hub, deps=(hub_net,)) if hub.storage.enabled else None
    spoke_storage: dict[str, str] = {}
    for spoke in config.spokes:
        if spoke.storage.enabled:
            storage_deps = (stack_id("network", spoke.region), stack_id("link", spoke.region))
            spoke_storage[spoke.region] = add(
                "storage", spoke, deps=storage_deps + ((hub_storage,) if hub_storage else ())
            )
    for region in config.regions():
        if region.compute.enabled:
            storage = hub_storage if region is hub else spoke_storage.get(region.region)
            add(
                "compute",
                region,
                deps=(stack_id("network", region.region),) + ((storage,) if storage else ()),
            )
    for spoke in config.spokes:
        if spoke.storage.enabled and hub_storage:
            # The canary runs in the spoke's network and probes the hub's floating IPs, read from the hub's
            # Storage stack itself (a weak reference: CDK orders it only within one account).
            add(
                "ops",
                spoke,
                deps=(stack_id("network", spoke.region), hub_storage, spoke_storage[spoke.region]),
            )
    # The one environment-wide stack: it shows every Region, so it (and only it) changes with the spokes.
    add("dashboard", hub, deps=tuple(p.id for p in plans if p.kind in ("ops", "compute")))
    return plans
