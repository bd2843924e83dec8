"""The contract between stacks: every value that crosses a stack boundary, by output name. No CDK.

A stack that needs another stack's value reads a named output of that stack with Fn::GetStackOutput (a weak
reference, docs/design.md §3). CloudFormation resolves it when the consumer is created or updated, by the name
written here; a deployed consumer keeps asking for that name. So renaming an output, or the stack that
produces it, breaks deployed environments: tests/test_outputs.py pins every name per stack kind, and the
stacks can read only the references `references()` declares (hubspoke/stacks/wiring.py enforces it).
`hubspoke plan` shows who reads what (after a producer's output changes, its consumers must be redeployed),
and `hubspoke verify` checks the same references against the live stacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.topology import StackKind, StackPlan, plan_stacks, stack_id


@dataclass(frozen=True)
class Output:
    """One output a kind of stack produces: its CloudFormation name and what it carries."""

    name: str
    producer: StackKind
    carries: str
    # One output per AZ ID, named `name` followed by the AZ ID in CamelCase (PrivateSubnetUse2Az1).
    per_az: bool = False

    def key(self, az_id: str | None = None) -> str:
        """The output's name in the template; per-AZ outputs need the AZ ID."""
        if self.per_az != (az_id is not None):
            raise ValueError(f"output {self.name} {'needs' if self.per_az else 'takes no'} AZ ID")
        if az_id is None:
            return self.name
        return self.name + "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", az_id))


# Network (every Region; PeeringConnectionId only in a spoke).
VPC_ID = Output("VpcId", "network", "the Region's VPC ID")
PEER_PATH_SECURITY_GROUP = Output(
    "PeerPathSecurityGroupId", "network", "the cross-Region security group (peer CIDR ingress)"
)
PRIVATE_ROUTE_TABLE = Output(
    "PrivateRouteTable", "network", "a private route table ID, one per route-table AZ ID", per_az=True
)
PRIVATE_SUBNET = Output("PrivateSubnet", "network", "a private subnet ID, one per AZ ID", per_az=True)
ACCELERATOR_SUBNET = Output(
    "AcceleratorSubnetId", "network", "the accelerator subnet ID (HyperPod and CNQ nodes)"
)
FLOW_LOG_GROUP = Output("FlowLogGroupName", "network", "the VPC flow-log group's name")
PEERING_CONNECTION = Output("PeeringConnectionId", "network", "the spoke's peering to the hub (spokes only)")
# Storage (every Region with CNQ).
FLOATING_IPS = Output("FloatingIps", "storage", "the CNQ cluster's floating IPs, comma-separated")
REST_ADDRESS = Output("RestAddress", "storage", "one CNQ address serving the REST API (port 8000)")
ADMIN_SECRET = Output("AdminSecretArn", "storage", "the Secrets Manager ARN of the CNQ admin password")
# Read by the hub's Compute stack, for the dataset load Job's role and settings (hubspoke/constructs/
# dataset_loader.py); only the hub's Storage stack has it, and only with dataset.source_buckets (constructs/shift.py).
SHIFT_USER = Output(
    "ShiftUserName", "storage", "the IAM user Qumulo Shift-From reads source buckets as (hub)"
)
# Least-privilege Qumulo logins, JSON {"username", "password"} (hubspoke/constructs/cnq/identity.py): the hub's
# loader (with dataset.source_buckets) for `hubspoke dataset load`, each spoke's for the prewarm Job.
LOADER_SECRET = Output(
    "LoaderSecretArn", "storage", "the Secrets Manager ARN of the Qumulo login dataset loads use (hub)"
)
PREWARM_SECRET = Output(
    "PrewarmSecretArn", "storage", "the Secrets Manager ARN of the Qumulo login the prewarm Job uses (spokes)"
)
# Compute (every Region with HyperPod): read by operators and `hubspoke verify`, by no stack.
EKS_CLUSTER_NAME = Output("EksClusterName", "compute", "the EKS cluster's name")
HYPERPOD_CLUSTER_ARN = Output("HyperPodClusterArn", "compute", "the SageMaker HyperPod cluster's ARN")
# Read by `hubspoke connect`: where the tunnel goes and through which instance (only with the access host).
EKS_ENDPOINT = Output("EksEndpoint", "compute", "the EKS API server endpoint URL (private)")
ACCESS_HOST_INSTANCE = Output(
    "AccessHostInstanceId", "compute", "the SSM access host's instance ID (with access.access_host only)"
)
TRAINING_IMAGE_REPOSITORY = Output(
    "TrainingImageRepositoryUri", "compute", "the URI of the Region's ECR repository for the training image"
)
# Read by `hubspoke render export`: where the export Job copies trained checkpoints.
MODEL_EXPORT_BUCKET = Output(
    "ModelExportBucket", "compute", "the name of the Region's S3 bucket for exported models"
)

OUTPUTS: tuple[Output, ...] = (
    VPC_ID,
    PEER_PATH_SECURITY_GROUP,
    PRIVATE_ROUTE_TABLE,
    PRIVATE_SUBNET,
    ACCELERATOR_SUBNET,
    FLOW_LOG_GROUP,
    PEERING_CONNECTION,
    FLOATING_IPS,
    REST_ADDRESS,
    ADMIN_SECRET,
    SHIFT_USER,
    LOADER_SECRET,
    PREWARM_SECRET,
    EKS_CLUSTER_NAME,
    HYPERPOD_CLUSTER_ARN,
    EKS_ENDPOINT,
    ACCESS_HOST_INSTANCE,
    TRAINING_IMAGE_REPOSITORY,
    MODEL_EXPORT_BUCKET,
)


def produced(config: HubSpokeConfig, plan: StackPlan) -> tuple[str, ...]:
    """Every output name the stack of `plan` carries."""
    region = config.region_config(plan.region)
    if plan.kind == "network":
        names = [VPC_ID.key(), PEER_PATH_SECURITY_GROUP.key(), ACCELERATOR_SUBNET.key(), FLOW_LOG_GROUP.key()]
        names += [PRIVATE_ROUTE_TABLE.key(az) for az in route_table_az_ids(region)]
        names += [PRIVATE_SUBNET.key(az) for az in region.resolved_az_ids]
        if plan.region != config.hub.region:
            names.append(PEERING_CONNECTION.key())
        return tuple(names)
    # Outputs of optional resources: the access host (access.access_host), the Shift user and the loader login
    # (the hub's storage, when dataset.source_buckets lists buckets), the prewarm login (spokes' storage).
    optional = {
        ACCESS_HOST_INSTANCE: config.access.host_enabled,
        SHIFT_USER: plan.region == config.hub.region and bool(config.dataset.source_buckets),
        LOADER_SECRET: plan.region == config.hub.region and bool(config.dataset.source_buckets),
        PREWARM_SECRET: plan.region != config.hub.region,
    }
    return tuple(o.key() for o in OUTPUTS if o.producer == plan.kind and optional.get(o, True))


@dataclass(frozen=True)
class Reference:
    """One Fn::GetStackOutput: the stack `consumer` reads `output` of the stack `producer` (stack ids)."""

    consumer: str
    producer: str
    output: str


def references(config: HubSpokeConfig) -> tuple[Reference, ...]:
    """Every cross-stack read of the environment, consumer by consumer in deploy order."""
    hub = config.hub
    refs: list[Reference] = []

    def read(consumer: StackPlan, producer: str, outputs: Iterable[str]) -> None:
        refs.extend(Reference(consumer.id, producer, name) for name in outputs)

    def network_of(code: str, *outputs: Output, per_az: Output | None = None) -> tuple[str, list[str]]:
        names = [o.key() for o in outputs]
        if per_az is not None:
            region = config.region_config(code)
            azs = route_table_az_ids(region) if per_az is PRIVATE_ROUTE_TABLE else region.resolved_az_ids
            names += [per_az.key(az) for az in azs]
        return stack_id("network", code), names

    for plan in plan_stacks(config):
        own = plan.region
        if (plan.kind == "network" and own != hub.region) or plan.kind == "peer-access":
            read(plan, *network_of(hub.region, VPC_ID))
        elif plan.kind == "link":
            assert plan.spoke is not None
            read(plan, stack_id("network", plan.spoke), [PEERING_CONNECTION.key()])
            read(plan, *network_of(hub.region, PEER_PATH_SECURITY_GROUP, per_az=PRIVATE_ROUTE_TABLE))
        elif plan.kind == "storage":
            read(
                plan,
                *network_of(own, VPC_ID, ACCELERATOR_SUBNET, PEER_PATH_SECURITY_GROUP, per_az=PRIVATE_SUBNET),
            )
            if own != hub.region:
                read(plan, stack_id("storage", hub.region), [FLOATING_IPS.key(), ADMIN_SECRET.key()])
        elif plan.kind == "compute":
            read(plan, *network_of(own, VPC_ID, ACCELERATOR_SUBNET, per_az=PRIVATE_SUBNET))
            if config.region_config(own).storage.enabled:
                read(plan, stack_id("storage", own), [FLOATING_IPS.key()])
                if own == hub.region and config.dataset.source_buckets:  # the dataset load Job's settings
                    read(plan, stack_id("storage", own), [SHIFT_USER.key(), LOADER_SECRET.key()])
        elif plan.kind == "ops":
            read(plan, *network_of(own, VPC_ID, FLOW_LOG_GROUP, per_az=PRIVATE_SUBNET))
            read(plan, stack_id("storage", hub.region), [FLOATING_IPS.key()])
            read(plan, stack_id("storage", own), [REST_ADDRESS.key(), ADMIN_SECRET.key()])
    return tuple(refs)


def consumers(config: HubSpokeConfig) -> dict[str, dict[str, tuple[str, ...]]]:
    """producer stack id -> consumer stack id -> the output names it reads: what to redeploy after a change."""
    table: dict[str, dict[str, list[str]]] = {}
    for ref in references(config):
        table.setdefault(ref.producer, {}).setdefault(ref.consumer, []).append(ref.output)
    return {p: {c: tuple(names) for c, names in by.items()} for p, by in table.items()}
