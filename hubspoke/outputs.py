"""The outputs the CLI and operators read, by name, and who reads what between stacks (from cdk.out). No CDK.

Stacks never read these names: one stack uses another's attribute and CDK turns it into a weak reference,
Fn::GetStackOutput of an output CDK adds to the producer (aws-cdk-lib 2.275 README, "Reference strength").
The names below are read by `hubspoke verify`, `connect`, `image`, `render export` and the runbooks, so they
are a contract: tests/test_outputs.py pins them per stack kind. Who reads what between stacks is read from the
synthesized cloud assembly (`references`): after a producer changes, its readers must be redeployed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hubspoke import names
from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.topology import StackKind, StackPlan, stage_id


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


# Network (every Region; PeeringConnectionId only in a spoke): read by `hubspoke verify`.
VPC_ID = Output("VpcId", "network", "the Region's VPC ID")
PEER_PATH_SECURITY_GROUP = Output(
    "PeerPathSecurityGroupId", "network", "the cross-Region security group (peer CIDR ingress)"
)
PRIVATE_ROUTE_TABLE = Output(
    "PrivateRouteTable", "network", "a private route table ID, one per route-table AZ ID", per_az=True
)
PEERING_CONNECTION = Output("PeeringConnectionId", "network", "the spoke's peering to the hub (spokes only)")
# Storage (every Region with CNQ): read by `hubspoke verify`, the canary check and the runbooks.
FLOATING_IPS = Output("FloatingIps", "storage", "the CNQ cluster's floating IPs, comma-separated")
REST_ADDRESS = Output("RestAddress", "storage", "one CNQ address serving the REST API (port 8000)")
ADMIN_SECRET = Output("AdminSecretArn", "storage", "the Secrets Manager ARN of the CNQ admin password")
# Only the hub's Storage stack has these, and only with dataset.source_buckets (docs/datasets.md).
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
        names = [VPC_ID.key(), PEER_PATH_SECURITY_GROUP.key()]
        names += [PRIVATE_ROUTE_TABLE.key(az) for az in route_table_az_ids(region)]
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
    """One Fn::GetStackOutput: the stack `consumer` reads `output` of the stack `producer` (stack ids).

    `carries` is what the output's value names in the producer: a resource's logical ID, or `ID.Attribute`.
    """

    consumer: str
    producer: str
    output: str
    carries: str = ""


class AssemblyMissing(ValueError):
    """The cloud assembly holds no template of the environment: `cdk synth` has not run for this config."""


def assembly_templates(config: HubSpokeConfig, assembly: Path) -> dict[str, dict[str, Any]]:
    """Stack id -> template of the environment's stacks in the cloud assembly `assembly` (cdk.out).

    Cloud assembly schema (aws-cdk-lib cloud-assembly-schema, manifest.json): a Stage is an artifact of type
    cdk:cloud-assembly whose directory holds its own manifest.json; each aws:cloudformation:stack artifact
    names its templateFile and its displayName (`<stage>/<stack id>`).
    """
    stage = stage_id(config)
    manifest = assembly / f"assembly-{stage}" / "manifest.json"
    if not manifest.is_file():
        raise AssemblyMissing(
            f"{manifest}: no synthesized templates of environment {config.environment}; run "
            f"`npx cdk synth -c config=<config-file> '{stage}/*'` first"
        )
    artifacts = json.loads(manifest.read_text())["artifacts"]
    return {
        a["displayName"].rsplit("/", 1)[-1]: json.loads(
            (manifest.parent / a["properties"]["templateFile"]).read_text()
        )
        for a in artifacts.values()
        if a.get("type") == "aws:cloudformation:stack"
    }


def _get_stack_outputs(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if "Fn::GetStackOutput" in value:
            yield value["Fn::GetStackOutput"]
        for v in value.values():
            yield from _get_stack_outputs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _get_stack_outputs(v)


def references(config: HubSpokeConfig, templates: dict[str, dict[str, Any]]) -> tuple[Reference, ...]:
    """Every cross-stack read in `templates` (stack id -> template): each distinct Fn::GetStackOutput once."""
    ids = {names.stack_name(config.environment, sid): sid for sid in templates}
    found: dict[Reference, None] = {}
    for consumer, template in templates.items():
        for ref in _get_stack_outputs(template):
            producer = ids.get(ref["StackName"], ref["StackName"])
            value = templates.get(producer, {}).get("Outputs", {}).get(ref["OutputName"], {}).get("Value")
            found[Reference(consumer, producer, ref["OutputName"], _carried(value))] = None
    return tuple(found)


def _carried(value: Any) -> str:
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return ".".join(value["Fn::GetAtt"])
    return "a value"


def readers(config: HubSpokeConfig, assembly: Path) -> dict[str, dict[str, tuple[Reference, ...]]]:
    """producer stack id -> consumer stack id -> what it reads: what to redeploy after a change.

    Read from the synthesized cloud assembly; AssemblyMissing when `cdk synth` has not written it.
    """
    table: dict[str, dict[str, list[Reference]]] = {}
    for ref in references(config, assembly_templates(config, assembly)):
        table.setdefault(ref.producer, {}).setdefault(ref.consumer, []).append(ref)
    return {p: {c: tuple(refs) for c, refs in by.items()} for p, by in table.items()}
