"""The shape of config/<env>.yaml: every key, its type, its default and what it does.

Each field's `description` is its entry in docs/configuration.md, which `make docs` generates from this module and
the sections it imports (fields.py, cnq.py, settings.py; hubspoke/config/reference.py); `# comments` beside a field
say why, with their sources, for maintainers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from hubspoke.config.cnq import (
    CacheVolumesConfig,
    PortalConfig,
    QumuloCoreConfig,
    StorageConfig,
    VolumeSetConfig,
    qumulo_bucket_rule,
)
from hubspoke.config.cnq_volumes import QUMULO_EC2_MAP
from hubspoke.config.fields import (
    DEFAULT_AZ_COUNT,
    VPC_MIN_PREFIX,
    AccountId,
    AzId,
    Cidr,
    ImageRef,
    Model,
    Quantity,
    Refusals,
    RegionCode,
    SecondaryCidr,
    VpcCidr,
    _hyperpod_type,
    _not_the_world,
    _once_each,
    effective_account,
    shown_as,
)
from hubspoke.config.settings import ACCESS_HOST_ARCHITECTURES, AccessConfig, DatasetConfig, OpsConfig
from hubspoke.eks_addons import (
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_KUBERNETES_VERSIONS,
    KUBECTL_LAYER_VERSION,
    KUBECTL_SKEW,
)
from hubspoke.regions import REGIONS

# The names other modules read from here, defined in the section modules.
__all__ = [
    "ACCESS_HOST_ARCHITECTURES",
    "VPC_MIN_PREFIX",
    "AccessConfig",
    "AzId",
    "CacheVolumesConfig",
    "DatasetConfig",
    "HubConfig",
    "HubSpokeConfig",
    "Model",
    "QumuloCoreConfig",
    "Refusals",
    "RegionConfig",
    "SpokeConfig",
    "StorageConfig",
    "VolumeSetConfig",
    "effective_account",
    "qumulo_bucket_rule",
]


class InstanceGroupConfig(Model):
    """One HyperPod instance group."""

    name: Annotated[str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")] = Field(
        default="accelerated-worker-group-1", description="the instance group's name in the HyperPod cluster"
    )
    # The values of ClusterInstanceType in the installed botocore's sagemaker model (aws_models.py).
    instance_type: Annotated[str, AfterValidator(_hyperpod_type)] = Field(
        default="ml.p5.48xlarge",
        description="the SageMaker HyperPod instance type of every node in the group",
    )
    count: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=2, description="nodes in the group, 1 to 1,000"
    )
    ebs_volume_gb: Annotated[int, Field(ge=1, le=16384)] = Field(
        default=500, description="the extra EBS volume of every node, in GB"
    )
    # On-start deep health checks (CreateCluster OnStartDeepHealthChecks; DeepHealthCheckType in botocore's
    # sagemaker service model also lists MultiNodeTrainingValidation, which hubspoke has no source for yet).
    # InstanceStress is the instance-level test of about 2 hours a new node runs before it is Running
    # (SageMaker developer guide, "Recommended resiliency configuration"); InstanceConnectivity is NCCL across
    # nodes, refused below 2 nodes (_connectivity_has_peers). Empty: none, nodes run at once; the
    # stack's node waiter then has no Checking waits (hubspoke/deploy_time.py node_wait_phases).
    on_start_deep_health_checks: Annotated[
        list[Literal["InstanceStress", "InstanceConnectivity"]], AfterValidator(_once_each)
    ] = Field(
        default=["InstanceStress", "InstanceConnectivity"],
        description="the deep health checks a new node runs before it is Running; `[]` for none, about 2 hours "
        "less per new node; `InstanceConnectivity` needs `count` 2 or more: [runbooks/compute.md](runbooks/compute.md)",
    )

    @model_validator(mode="after")
    def _connectivity_has_peers(self) -> InstanceGroupConfig:
        # SageMaker developer guide, "Deep health checks" (Slurm): InstanceConnectivity "requires at least 2 nodes";
        # the EKS page states no minimum: ASSUMED the same, the same NCCL test.
        if "InstanceConnectivity" in self.on_start_deep_health_checks and self.count < 2:
            raise Refusals(
                [
                    "on_start_deep_health_checks: InstanceConnectivity runs NCCL tests across a group's nodes and "
                    "requires at least 2 nodes (SageMaker developer guide, 'Deep health checks'), but this group has "
                    f"count: {self.count}: remove InstanceConnectivity from the list (keep InstanceStress, or [] for "
                    "no checks), or set count: 2 or more"
                ]
            )
        return self


def _within_kubectl_skew(version: str) -> str:
    # The kubectl layer that applies the manifests works within one minor of the control plane (eks_addons.py).
    if version not in KUBECTL_SKEW:
        raise ValueError(
            f"{version}: hubspoke's kubectl {KUBECTL_LAYER_VERSION} Lambda layer works with Kubernetes "
            f"{', '.join(KUBECTL_SKEW)} only (one minor either side); set one of those (a deployed cluster moves one "
            "minor per deploy: docs/runbooks/compute.md, 'Upgrading Kubernetes')"
        )
    return version


# The versions HyperPod lists, oldest first (for the reference's wording).
_HYPERPOD_VERSIONS = sorted(HYPERPOD_KUBERNETES_VERSIONS, key=lambda v: tuple(int(p) for p in v.split(".")))


class ComputeConfig(Model):
    """The Region's SageMaker HyperPod cluster on EKS and its Kubernetes storage."""

    enabled: bool = Field(
        default=True, description="deploy EKS + HyperPod here (refused where HyperPod is not offered)"
    )
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d{2}$"), AfterValidator(_within_kubectl_skew)] = (
        Field(
            default=DEFAULT_KUBERNETES_VERSION,
            description=f'EKS version, quoted (`"{DEFAULT_KUBERNETES_VERSION}"`): one hubspoke\'s kubectl layer reaches '
            f"({', '.join(f'`{v}`' for v in KUBECTL_SKEW)}; HyperPod's own list is wider, "
            f"{_HYPERPOD_VERSIONS[0]} to {_HYPERPOD_VERSIONS[-1]}); "
            "a deployed cluster moves one minor per deploy, so an "
            "environment states its version, hub and spokes each "
            "([runbooks/compute.md](runbooks/compute.md#upgrading-kubernetes))",
        )
    )
    # Checked in network_rules.py: pods would lose the route to an overlapping VPC.
    service_cidr: Cidr = Field(
        default="172.20.0.0/16", description="Kubernetes service CIDR; must not overlap any VPC"
    )
    public_access_cidrs: list[Annotated[Cidr, AfterValidator(_not_the_world)]] = Field(
        default=[], description="EKS API endpoint is private unless CIDRs are listed"
    )
    instance_groups: Annotated[list[InstanceGroupConfig], Field(min_length=1)] = Field(
        default=[InstanceGroupConfig()],
        description="the HyperPod cluster's instance groups; keys below",
        json_schema_extra=shown_as("one group"),
    )
    training_plan_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:sagemaker:")] | None = Field(
        default=None, description="a SageMaker training plan to run the instance group on"
    )
    dataset_volume_size: Quantity = Field(
        default="50Ti", description="size of the ReadWriteMany dataset volume"
    )
    checkpoint_volume_size: Quantity = Field(
        default="2Ti", description="size of the Region-local checkpoint volume"
    )
    # Built from workload/Dockerfile. The default is the digest `hubspoke image build` recorded for this
    # Region's own ECR repository: images pulled across Regions pay transfer on every node start.
    training_image: ImageRef | None = Field(
        default=None,
        description="image of the reference training job",
        json_schema_extra=shown_as("the Region's ECR"),
    )


class QuotasConfig(Model):
    """AWS quotas of the Region's account that the topology relies on, when they were raised above the default."""

    # Amazon VPC "Inbound or outbound rules per security group" (L-0EA8095F): 60 by default, adjustable; this quota
    # times "Security groups per network interface" may not exceed 1,000 (Amazon VPC User Guide, "Amazon VPC
    # quotas", Security groups). CNQ node interfaces carry two groups (their own and the cross-Region one), so
    # at most 500. Validation counts the cross-Region rules the topology needs against it; preflight reads the
    # applied value.
    security_group_rules: Annotated[int, Field(ge=60, le=500)] = Field(
        default=60,
        description='the account\'s "Inbound or outbound rules per security group" (L-0EA8095F) in this Region, '
        "when raised: validation refuses a topology whose cross-Region rules exceed it, preflight checks the "
        "applied value (at most 500)",
    )
    # Amazon VPC "IPv4 CIDR blocks per VPC" (L-83CA0A9D): 5 by default, adjustable up to 50 (Amazon VPC User
    # Guide, "Amazon VPC quotas", VPC and subnets). The primary block counts. Validation refuses more blocks on a
    # VPC than this states.
    vpc_cidr_blocks: Annotated[int, Field(ge=5, le=50)] = Field(
        default=5,
        description='the account\'s "IPv4 CIDR blocks per VPC" (L-83CA0A9D) in this Region, when raised: '
        "validation refuses more blocks (primary and `secondary_cidrs`) on the VPC than this (at most 50)",
    )
    # Amazon VPC "Routes per route table" (L-93826ACB): 50 by default, adjustable up to 1,000 (Amazon VPC User
    # Guide, "Amazon VPC quotas", Route tables). Each private route table holds a route per peer CIDR over the
    # peering (on the hub: every spoke's blocks). Validation refuses more routes than this states.
    routes_per_route_table: Annotated[int, Field(ge=50, le=1000)] = Field(
        default=50,
        description='the account\'s "Routes per route table" (L-93826ACB; Amazon VPC User Guide, "Amazon VPC '
        'quotas": 50 by default, adjustable up to 1,000) in this Region, when raised: validation refuses private '
        "route tables needing more routes (one per peer CIDR over the peering, every spoke's blocks on the hub, "
        "plus the local, S3-endpoint and NAT routes) than this",
    )


class RegionConfig(Model):
    """One Region of the environment: its VPC and what runs in it."""

    region: RegionCode = Field(description="Region code; one spoke per Region, never the hub's")
    cidr: VpcCidr = Field(description="VPC CIDR, `/16` to `/20` (the subnet layout needs `/20`)")
    account: AccountId | None = Field(
        default=None,
        description="the Region's account; a different one makes a cross-account peering",
        json_schema_extra=shown_as("top-level `account`"),
    )
    secondary_cidrs: list[SecondaryCidr] = Field(
        default=[], description="more VPC CIDR blocks (`/16` to `/28`), routed over the peering too"
    )
    # The default comes from regions.py (resolved_az_ids).
    az_ids: Annotated[list[AzId], Field(min_length=1, max_length=4)] | None = Field(
        default=None,
        description="AZ **IDs** (e.g. `usw2-az1`) for the private subnets; fixed after the first deploy "
        "([why](runbooks/deploy-environment.md#keys-fixed-at-the-first-deploy))",
        json_schema_extra=shown_as(f"the Region's first {DEFAULT_AZ_COUNT}"),
    )
    accelerator_az_id: AzId | None = Field(
        default=None,
        description="AZ ID of the accelerator subnet: HyperPod and the local CNQ live here; fixed after the first "
        "deploy ([why](runbooks/deploy-environment.md#keys-fixed-at-the-first-deploy))",
        json_schema_extra=shown_as("first of `az_ids`"),
    )
    nat: Literal["single", "per_az", "none"] = Field(
        default="single",
        description="`single`, `per_az` or `none` (no egress to the internet; refused where storage is enabled: "
        "CNQ must reach Qumulo's endpoints)",
    )
    # CloudWatch Logs retention values of a year or more: Control Tower's CT.CLOUDWATCH.PR.2, which every synth
    # runs (cdklabs-cdk-validator-cfnguard 0.0.62, rules/control-tower/cfn-guard/cloudwatch/
    # ct-cloudwatch-pr-2.guard), refuses a log group kept for less than 365 days.
    flow_logs_retention_days: Literal[365, 731, 1827, 3653] = Field(
        default=365,
        description="VPC flow log retention: 365, 731, 1827 or 3653 days (Control Tower's CT.CLOUDWATCH.PR.2 "
        "refuses less)",
    )
    quotas: QuotasConfig = Field(
        default=QuotasConfig(),
        description="AWS quotas of the Region's account the topology relies on, when raised above the default; "
        "keys below",
    )
    storage: StorageConfig = Field(
        default=StorageConfig(),
        description="the Region's Cloud Native Qumulo cluster (hub or spoke); keys below",
    )
    compute: ComputeConfig = Field(
        default=ComputeConfig(),
        description="the Region's SageMaker HyperPod cluster on EKS and its Kubernetes storage; keys below",
    )

    _path: str = PrivateAttr(default="hub")

    @property
    def path(self) -> str:
        """`hub` or `spokes[<i>]`: the prefix of every field a rule names in this Region."""
        return self._path

    @property
    def is_hub(self) -> bool:
        return self._path == "hub"

    @property
    def storage_on(self) -> StorageConfig | None:
        return self.storage if self.storage.enabled else None

    @property
    def compute_on(self) -> ComputeConfig | None:
        return self.compute if self.compute.enabled else None

    def cidr_fields(self) -> list[tuple[str, ipaddress.IPv4Network]]:
        """The VPC blocks, primary first, with the field each sits in."""
        fields = [
            f"{self._path}.cidr",
            *(f"{self._path}.secondary_cidrs[{i}]" for i in range(len(self.secondary_cidrs))),
        ]
        return [
            (field, ipaddress.IPv4Network(block)) for field, block in zip(fields, self.all_cidrs, strict=True)
        ]

    def undeployable(self) -> list[str]:
        """What the Region's CNQ and HyperPod lack to deploy ("key: message"), which storage_rules.py reports:
        pinned images, node volumes, egress, a local CNQ. A config built in code may leave them out."""
        problems = []
        storage = self.storage
        if self.compute.enabled and not storage.enabled:
            problems.append(
                "compute: compute mounts the dataset from this Region's own CNQ, but "
                "storage.enabled is false: enable storage here or set compute.enabled: false"
            )
        if storage.enabled and self.nat == "none":
            problems.append(
                "nat: none leaves the CNQ nodes without the outbound access Qumulo requires for "
                "deployment and quorum (api.missionq.qumulo.com, api.nexus.qumulo.com): set nat: single (or "
                "per_az), or storage.enabled: false for this Region"
            )
        # HyperPod nodes reach ECR, EKS, SageMaker and CloudWatch through NAT: the VPC has an S3 gateway endpoint
        # only (SageMaker HyperPod developer guide, "Setting up SageMaker HyperPod clusters with a custom Amazon VPC").
        if self.compute.enabled and self.nat == "none":
            problems.append(
                "nat: none leaves the HyperPod nodes and the compute stack's functions without a "
                "route to ECR, EKS, SageMaker and CloudWatch (hubspoke adds no interface endpoints): set nat: single "
                "(or per_az), or compute.enabled: false for this Region"
            )
        if not storage.enabled:
            return problems
        # A deploy-time image lookup would re-resolve on every update and replace every node at once.
        if storage.ami_id is None:
            problems.append(
                f"storage.ami_id: required with storage: pin a stock Ubuntu 24.04 LTS image for {self.region}; "
                f"`hubspoke ami --region {self.region}` prints the current one as the line to paste (ami_id: ami-...)"
            )
        if storage.qumulo_core is None:
            problems.append(
                "storage.qumulo_core: required with storage: the Qumulo Core release the nodes install and "
                "where it is staged, e.g. {version: 7.10.2.1, install_uri: s3://my-bucket/my-prefix/"
                "qumulo-core-install/} (docs/runbooks/qumulo-core.md)"
            )
        if storage.instance_type not in QUMULO_EC2_MAP and storage.cache_volumes is None:
            problems.append(
                f"storage.cache_volumes: required for {storage.instance_type}: Qumulo's AWS layout (write "
                "cache, DKV and read cache EBS volumes per node) covers other types only; set write_cache {count, "
                "size_gib, type, iops, throughput_mibps} (docs/runbooks/qumulo-core.md, 'Node volumes') or pick a "
                "type Qumulo lists"
            )
        if storage.floating_ip_count is not None and storage.floating_ip_count < storage.node_count:
            problems.append(
                f"storage.floating_ip_count: {storage.floating_ip_count} floating IPs for {storage.node_count} "
                "nodes: Qumulo gives every node at least one (its AWS Terraform raises a smaller count to the node "
                f"count): set at least {storage.node_count}"
            )
        per_node, tb, nodes = storage.capacity_per_node_tb, storage.soft_capacity_limit_tb, storage.node_count
        if per_node is not None and tb > per_node * nodes:
            problems.append(
                f"storage.soft_capacity_limit_tb: {tb} TB over {nodes} nodes is {tb / nodes:g} TB per node, "
                f"above capacity_per_node_tb ({per_node}): the number and type of instances will not support it "
                f"(Qumulo); raise node_count to {-(-tb // per_node)} or pick a larger instance type"
            )
        return problems

    @property
    def resolved_az_ids(self) -> tuple[str, ...]:
        return tuple(self.az_ids) if self.az_ids else REGIONS[self.region].default_az_ids[:DEFAULT_AZ_COUNT]

    @property
    def resolved_accelerator_az_id(self) -> str:
        return self.accelerator_az_id or self.resolved_az_ids[0]

    @property
    def all_cidrs(self) -> tuple[str, ...]:
        return (self.cidr, *self.secondary_cidrs)


class HubConfig(RegionConfig):
    """The hub Region: where the dataset lives."""


class SpokeConfig(RegionConfig):
    """A spoke Region: caches the hub through a portal and trains next to the cache."""

    portal: PortalConfig = Field(
        default=PortalConfig(),
        description="how the spoke's Cloud Data Fabric portal caches the hub; keys below",
    )


class HubSpokeConfig(Model):
    """One environment: a hub Region, its spoke Regions, and the settings they share."""

    environment: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,15}$")] = Field(
        description="short lowercase name (a letter, then at most 15 letters, digits or hyphens); stack names are "
        "`hubspoke-<environment>-<kind>-<region>`"
    )
    account: AccountId = Field(
        description="12-digit account ID, quoted; a Region may override it with its own `account`"
    )
    # Inter-Region peering carries at most 8500 bytes (EC2 User Guide, "Network MTU").
    inter_region_mtu: Annotated[int, Field(ge=1280, le=8500)] = Field(
        default=8500,
        description="MTU of every path over the peering; inter-Region peering carries at most 8500",
    )
    tags: dict[str, str] = Field(default={}, description="extra tags on every stack")
    # The DLC "Available Images" page (aws/deep-learning-containers docs/reference/available_images.md) lists this
    # EC2 PyTorch 2.9.0 GPU training image; its base carries EFA and aws-ofi-nccl (pytorch/training/docker/2.9/
    # py3/cu130/Dockerfile.gpu). The DLC account is 763104351884 in us-west-2 (DLC "Region Availability").
    training_base_image: ImageRef = Field(
        default="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
        description="base of `hubspoke image build` without `--base`: a PyTorch 2.6-2.11 GPU image with EFA and "
        "aws-ofi-nccl; a tag in ECR is resolved to its digest at build time and recorded "
        "([AWS DLC available images](https://aws.github.io/deep-learning-containers/reference/available_images/))",
    )
    hub: HubConfig = Field(
        description="the hub Region, where the dataset lives; its keys start with `.` below"
    )
    spokes: list[SpokeConfig] = Field(
        default=[], description="the spoke Regions, one per Region; the same keys as `hub`, and `portal`"
    )
    access: AccessConfig = Field(
        default=AccessConfig(),
        description="who administers every compute cluster, and the access host they reach its endpoint by; "
        "keys below",
    )
    dataset: DatasetConfig = Field(
        default=DatasetConfig(),
        description="the dataset version training jobs pin, the token format they expect of it, and the buckets "
        "loads read; keys below",
    )
    ops: OpsConfig = Field(
        default=OpsConfig(),
        description="who is told when the hub goes away, and the floors the alarms hold; keys below",
    )

    def model_post_init(self, context: Any, /) -> None:
        for i, spoke in enumerate(self.spokes):
            spoke._path = f"spokes[{i}]"

    def regions(self) -> Iterator[RegionConfig]:
        """The hub first, then every spoke in config order."""
        yield self.hub
        yield from self.spokes

    def account_of(self, region: RegionConfig) -> str:
        account: str = effective_account(region.account, self.account)
        return account

    def spoke(self, code: str) -> SpokeConfig:
        return next(s for s in self.spokes if s.region == code)

    def region_config(self, code: str) -> RegionConfig:
        return next(r for r in self.regions() if r.region == code)

    def peer_cidrs(self, region: RegionConfig) -> tuple[str, ...]:
        """CIDRs reachable over peering from this Region: the hub's for a spoke, every spoke's for the hub."""
        if region.region == self.hub.region:
            return tuple(c for s in self.spokes for c in s.all_cidrs)
        return self.hub.all_cidrs
