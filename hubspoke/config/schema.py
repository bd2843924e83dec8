"""The shape of config/<env>.yaml: every key, its type and its documented default (README, 'Configuration')."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from hubspoke.dataset_manifest import SEGMENT_PATTERN
from hubspoke.regions import REGIONS, partition_regions

# AWS allows VPC CIDR blocks from /16 to /28; our subnet layout needs /20 or larger (see layout.py).
VPC_MAX_PREFIX = 16
VPC_MIN_PREFIX = 20
SECONDARY_MIN_PREFIX = 28


def _network(value: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16") from None
    if not isinstance(net, ipaddress.IPv4Network) or "/" not in value:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16")
    if str(net) != value:
        raise ValueError(f"'{value}' has host bits set; did you mean {net}?")
    return net


def _cidr(value: str) -> str:
    _network(value)
    return value


def _vpc_cidr(value: str) -> str:
    net = _network(value)
    if net.prefixlen < VPC_MAX_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is larger than AWS allows for a VPC; use a prefix from /16 to /20"
        )
    if net.prefixlen > VPC_MIN_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is too small for the subnet layout (a quarter for the accelerator subnet, "
            f"a sixteenth per private subnet, a sixty-fourth per public subnet); the minimum is "
            f"/{VPC_MIN_PREFIX}: use /16 to /{VPC_MIN_PREFIX}, e.g. {net.supernet(new_prefix=16)}"
        )
    return value


def _secondary_cidr(value: str) -> str:
    net = _network(value)
    if not VPC_MAX_PREFIX <= net.prefixlen <= SECONDARY_MIN_PREFIX:
        raise ValueError(f"/{net.prefixlen} is outside what AWS allows for a VPC CIDR block (/16 to /28)")
    return value


def _region(value: str) -> str:
    known = partition_regions() | set(REGIONS)
    if value not in known:
        import difflib

        close = difflib.get_close_matches(value, sorted(known), n=1)
        hint = f"did you mean {close[0]}?" if close else "use a commercial Region code such as us-west-2"
        raise ValueError(f"unknown Region code '{value}'; {hint}")
    return value


def _once_each(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError(f"list each check once: {value}")
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]
VpcCidr = Annotated[str, AfterValidator(_vpc_cidr)]
SecondaryCidr = Annotated[str, AfterValidator(_secondary_cidr)]
RegionCode = Annotated[str, AfterValidator(_region)]
AccountId = Annotated[str, Field(pattern=r"^\d{12}$")]
AzId = Annotated[str, Field(pattern=r"^[a-z]+\d-az\d+$")]
Quantity = Annotated[str, Field(pattern=r"^[1-9]\d*(Gi|Ti)$")]


def _not_latest(value: str) -> str:
    # `latest` is the tag every untagged push moves: two pods of one job could pull different images.
    if value.endswith(":latest"):
        raise ValueError(
            "`:latest` names whatever was pushed last; use the digest `hubspoke image build` printed "
            "(repository@sha256:...) or another immutable tag"
        )
    return value


# registry/repository:tag or @sha256:digest, as docker push printed it; never `:latest`.
ImageRef = Annotated[
    str,
    Field(pattern=r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"),
    AfterValidator(_not_latest),
]


def effective_account(region_account: Any, environment_account: Any) -> Any:
    """A Region's account: its own when set, else the environment's."""
    return region_account or environment_account


class Model(BaseModel):
    """Base for every config section: unknown keys are errors, values are immutable, types are not coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- CNQ install (issue 13): which Qumulo Core the nodes install, from where, on which pinned image ---
# Qumulo's CNQ-on-AWS guide stages `qumulo-core.deb` under `<bucket>/<prefix>/qumulo-core-install/<version>/`
# (Qumulo/docs, _includes/content-reuse/cnq-guide-aws/deployment-agnostic-cluster-persistent-storage.md).
QUMULO_CORE_INSTALL_FOLDER = "qumulo-core-install"
QUMULO_CORE_PACKAGE = "qumulo-core.deb"
# Staged beside the package by the same guide step; the nodes do not read it (docs/runbooks/qumulo-core.md).
QUMULO_HOST_CONFIGURATION = "host_configuration.tar.gz"


def _install_uri(value: str) -> str:
    match = re.fullmatch(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/((?:[^/\s]+/)*)", value)
    if match is None or ".." in match.group(1):
        raise ValueError(
            f"'{value}' is not an S3 folder URI; write it like s3://my-bucket/my-prefix/"
            f"{QUMULO_CORE_INSTALL_FOLDER}/ (lowercase bucket name, ending with '/')"
        )
    if not match.group(2).endswith(f"{QUMULO_CORE_INSTALL_FOLDER}/"):
        raise ValueError(
            f"'{value}' does not end with '{QUMULO_CORE_INSTALL_FOLDER}/'; Qumulo's layout is "
            f"s3://<bucket>/<prefix>/{QUMULO_CORE_INSTALL_FOLDER}/<version>/{QUMULO_CORE_PACKAGE}: "
            f"give the URI of the {QUMULO_CORE_INSTALL_FOLDER}/ folder"
        )
    return value


class QumuloCoreConfig(Model):
    """The Qumulo Core release every node of the Region installs, staged in S3 the way Qumulo's guide says."""

    # A release as Nexus names it and as GET /v1/version reports it ("Qumulo Core 7.10.2.1").
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+(\.\d+)?$")]
    # The `qumulo-core-install/` folder; the package is <install_uri><version>/qumulo-core.deb.
    install_uri: Annotated[str, AfterValidator(_install_uri)]

    @property
    def bucket(self) -> str:
        return self.install_uri.removeprefix("s3://").split("/", 1)[0]

    @property
    def package_key(self) -> str:
        prefix = self.install_uri.removeprefix("s3://").split("/", 1)[1]
        return f"{prefix}{self.version}/{QUMULO_CORE_PACKAGE}"

    @property
    def package_uri(self) -> str:
        return f"s3://{self.bucket}/{self.package_key}"

    @property
    def host_configuration_key(self) -> str:
        return f"{self.package_key.rsplit('/', 1)[0]}/{QUMULO_HOST_CONFIGURATION}"


class VolumeSetConfig(Model):
    """`count` identical EBS volumes on every CNQ node, besides its boot volume."""

    count: Annotated[int, Field(ge=0, le=96)]
    size_gib: Annotated[int, Field(ge=1, le=16384)]
    # Qumulo's AWS deployments offer gp2, gp3 or io2 for the cache and gp2 or gp3 for DKV (aws-terraform-cnq 6.3,
    # q_write_cache_type, q_boot_dkv_type).
    type: Literal["gp3", "gp2", "io2"] = "gp3"
    # EBS: gp3 takes 3000 to 16000 IOPS and 125 to 1000 MiB/s; io2 needs its IOPS; gp2 takes neither
    # (the same ranges in Qumulo's q_write_cache_iops and q_write_cache_tput).
    iops: Annotated[int, Field(ge=100, le=256000)] | None = None
    throughput_mibps: Annotated[int, Field(ge=125, le=1000)] | None = None

    @model_validator(mode="after")
    def _performance_fits_type(self) -> VolumeSetConfig:
        if self.type == "gp2" and (self.iops is not None or self.throughput_mibps is not None):
            raise ValueError("gp2 takes neither iops nor throughput_mibps: remove them or use gp3")
        if self.type == "io2" and (self.iops is None or self.throughput_mibps is not None):
            raise ValueError("io2 needs iops and takes no throughput_mibps")
        if self.type == "gp3" and self.iops is not None and not 3000 <= self.iops <= 16000:
            raise ValueError(f"gp3 takes 3000 to 16000 iops, not {self.iops}")
        return self


# Qumulo's DKV volumes (aws-terraform-cnq 6.3, modules/qcluster: dkvSlots 4 x dkvSize 4 GiB, 3000 IOPS, 125 MB/s).
QUMULO_DKV = VolumeSetConfig(count=4, size_gib=4, iops=3000, throughput_mibps=125)
NO_VOLUMES = VolumeSetConfig(count=0, size_gib=1)


class CacheVolumesConfig(Model):
    """The EBS volumes of every CNQ node besides its boot volume: write cache, DKV and (without instance
    store) read cache, as Qumulo's AWS deployments attach them (hubspoke/config/cnq_volumes.py)."""

    write_cache: VolumeSetConfig
    dkv: VolumeSetConfig = QUMULO_DKV
    read_cache: VolumeSetConfig = NO_VOLUMES


# Qumulo's GCP bucket rule (inferred for AWS, see bucket_count): the soft capacity limit / 500 TB, at least 16.
BUCKET_TB = 500
MIN_BUCKETS = 16
DEFAULT_FLOATING_IPS_PER_NODE = 3
MAX_FLOATING_IPS = 100


def qumulo_bucket_rule(soft_capacity_limit_tb: int) -> int:
    """max(16, ceil(TB / 500)): the buckets Qumulo's persistent-storage module creates for a limit."""
    return max(MIN_BUCKETS, -(-soft_capacity_limit_tb // BUCKET_TB))


class StorageConfig(Model):
    """The Region's Cloud Native Qumulo cluster (hub or spoke)."""

    enabled: bool = True
    # Qumulo allows 1 node, or 3 to 24 (checked in storage_rules.py). The reference hub ran 4 nodes.
    node_count: int = 4
    # i4i is in Qumulo's supported families and matches the reference hub's r5.8xlarge in vCPU and memory.
    instance_type: str = "i4i.8xlarge"
    # A stock Ubuntu LTS image pinned per Region (required with storage, storage_rules.py): a deploy-time lookup would
    # re-resolve on every update and replace every node at once. `hubspoke preflight` prints the current one.
    ami_id: Annotated[str, Field(pattern=r"^ami-[0-9a-f]{8,17}$")] | None = None
    # Required with storage (storage_rules.py): there is no default release or staging bucket.
    qumulo_core: QumuloCoreConfig | None = None
    # How long the stack waits for boot, install and first quorum. Qumulo's own provider waits 30 minutes
    # (qumulo-terraform-aws, provider_timeout_minutes); CloudFormation gives a custom resource at most
    # 60 (ServiceTimeout 1..3600 s) and the provider needs a few to report. ASSUMED margin, hence a setting.
    formation_timeout_minutes: Annotated[int, Field(ge=30, le=55)] = 50
    # Qumulo's range: 50 to 50,000 TB (Qumulo/qumulo-terraform-aws @ 8a6e4d57, variables.tf soft_capacity_limit_tb
    # "Soft capacity limit in TB (50 to 50000)"; Qumulo/qumulo-terraform-gcp @ a30b449c, persistent-storage
    # variables.tf soft_capacity_limit validation). Raising it later adds buckets first (bucket_count below).
    soft_capacity_limit_tb: Annotated[int, Field(ge=50, le=50_000)] = 100
    # Qumulo's object-backed product types for AWS clusters (qumulo-api 7.10.2.1, qumulo/commands/cluster.py,
    # --product-type help; qumulo/rest/cluster.py ObjectBackedProductType); fixed at formation ("immutable
    # after creation", qumulo-terraform-aws @ 8a6e4d57, variables.tf cluster_product_type), so the provisioner
    # refuses a change. Earlier hubspoke releases formed every cluster as ACTIVE_WITH_STANDARD_STORAGE.
    product_type: Literal[
        "ACTIVE_WITH_STANDARD_STORAGE",
        "ACTIVE_WITH_INTELLIGENT_STORAGE",
        "ARCHIVE_WITH_IA_STORAGE",
        "ARCHIVE_WITH_GIR_STORAGE",
    ] = "ACTIVE_WITH_STANDARD_STORAGE"
    dataset_path: Annotated[str, Field(pattern=r"^/[^\s]*$")] = "/dataset"
    # Region-local export for training checkpoints; outside dataset_path (storage_rules.py) so it is never part
    # of the portal and FSDP checkpoint bursts never cross the peering.
    checkpoint_path: Annotated[str, Field(pattern=r"^/[^\s]*$")] = "/checkpoints"
    # SSH and the REST API (8000) from outside the VPC only from here; none by default.
    admin_cidr: Cidr | None = None
    # The cluster's floating IPs, a total Qumulo moves between nodes; clients, the portal and the REST address
    # use them. Qumulo's AWS range is "0, or between 3 and 100" (qumulo-terraform-aws @ 8a6e4d57, variables.tf
    # floating_ip_count); hubspoke needs at least one per node (its main.tf raises a count below node_count
    # to node_count) and never 0 (the portal and REST address are floating IPs). They are spread over the
    # nodes' interfaces as evenly as possible. Default: 3 per node, what earlier releases created, so an
    # existing cluster keeps its addresses (Qumulo's own default is 3 in total).
    floating_ip_count: Annotated[int, Field(ge=3, le=100)] | None = None
    # S3 buckets the persistent storage is spread over. Default: Qumulo's rule, max(16, ceil(TB / 500))
    # (qumulo-terraform-gcp @ a30b449c, persistent-storage/module/main.tf:47-49, number_buckets_calc and
    # _min), which grows with soft_capacity_limit_tb. That rule is stored only for GCP; that Qumulo's AWS
    # persistent storage uses it too is inferred (ASSUMED), hence bucket_count. Qumulo allows another count only in a development environment
    # (bucket_count_override "Requires dev_environment=true"): validation warns below the rule. Buckets are
    # only ever added (runtime/capacity.py); a cluster made with 4 keeps 4 by pinning bucket_count: 4.
    bucket_count: Annotated[int, Field(ge=1, le=100)] | None = None
    # Default: Qumulo's own layout for instance_type (hubspoke.config.cnq_volumes); required for a type
    # Qumulo publishes none for (storage_rules.py).
    cache_volumes: CacheVolumesConfig | None = None
    # The nodes' first-boot script. "current" keeps the floating IPs out of the OS's network config
    # (node/network.sh) and sets the read-cache override on layouts with EBS read cache. "legacy" renders,
    # byte for byte, the script of releases before it, for a cluster whose nodes were launched with that one:
    # a new script is new user data, which the node-shape guard refuses on running nodes (CloudFormation
    # would stop them all at once). Such a cluster fixes its running nodes in place, one at a time
    # (docs/runbooks/qumulo-core.md, "Floating IPs and cloud-init").
    first_boot: Literal["current", "legacy"] = "current"
    # How many network hops an IMDSv2 token travels from the nodes. Issue 22's review of Qumulo's earlier
    # CNQ-on-AWS launch settings reports 3 (that source is not stored here: ASSUMED, hence a setting);
    # Qumulo Core runs in a container (systemd-container) and moves floating IPs through the EC2 API, which a
    # limit of 1 could cut off if the container is a hop away. A change applies without interruption
    # (CloudFormation, AWS::EC2::Instance MetadataOptions HttpPutResponseHopLimit: "No interruption").
    imds_hop_limit: Annotated[int, Field(ge=1, le=64)] = 3
    # The most soft capacity (TB) one node of instance_type supports. Qumulo's GCP module refuses a limit
    # above it times the nodes ("The number of and type of instances chosen will not support the
    # soft_capacity_limit requested", qumulo-terraform-gcp @ a30b449c, qcluster main.tf
    # check_capacity_constraint, gce_map nodeCap); Qumulo's AWS figures are in its closed provider, not in a
    # stored source, so none is assumed: state the figure Qumulo gives for the type and validation checks it.
    capacity_per_node_tb: Annotated[int, Field(ge=1)] | None = None

    @property
    def buckets(self) -> int:
        """The persistent-storage buckets: bucket_count, else Qumulo's rule for the soft capacity limit."""
        return (
            self.bucket_count
            if self.bucket_count is not None
            else qumulo_bucket_rule(self.soft_capacity_limit_tb)
        )

    @property
    def floating_ips(self) -> int:
        """The cluster's floating IPs in total: floating_ip_count, else 3 per node (capped at Qumulo's 100)."""
        if self.floating_ip_count is not None:
            return self.floating_ip_count
        return min(DEFAULT_FLOATING_IPS_PER_NODE * self.node_count, MAX_FLOATING_IPS)

    def floating_ips_on_node(self, index: int) -> int:
        """How many of the floating IPs node `index` (0-based) carries: an even spread, the first nodes one more."""
        share, extra = divmod(self.floating_ips, self.node_count)
        return share + (1 if index < extra else 0)


class PortalConfig(Model):
    """How a spoke's Cloud Data Fabric portal caches the hub."""

    mode: Literal["read_only", "read_write"] = "read_only"
    # Fraction of the spoke's capacity kept free; Qumulo evicts cached blocks below it.
    eviction_free_threshold: Annotated[float, Field(gt=0, lt=1)] = 0.1


class InstanceGroupConfig(Model):
    """One HyperPod instance group."""

    name: Annotated[str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")] = "accelerated-worker-group-1"
    # SageMaker's ClusterInstanceType values (botocore sagemaker service model) include hyphenated families
    # such as ml.p6-b200.48xlarge and ml.p6e-gb200.36xlarge.
    instance_type: Annotated[str, Field(pattern=r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$")] = (
        "ml.p5.48xlarge"
    )
    count: Annotated[int, Field(ge=1, le=1000)] = 2
    ebs_volume_gb: Annotated[int, Field(ge=1, le=16384)] = 500
    # On-start deep health checks (CreateCluster OnStartDeepHealthChecks; DeepHealthCheckType in botocore's
    # sagemaker service model also lists MultiNodeTrainingValidation, which hubspoke has no source for yet).
    # InstanceStress is the instance-level test of about 2 hours a new node runs before it is Running
    # (SageMaker developer guide, "Recommended resiliency configuration"); InstanceConnectivity is NCCL across
    # nodes, refused below 2 nodes (hubspoke/config/compute_rules.py). Empty: none, nodes run at once; the
    # stack's node waiter then has no Checking waits (hubspoke/deploy_time.py node_wait_phases).
    on_start_deep_health_checks: Annotated[
        list[Literal["InstanceStress", "InstanceConnectivity"]], AfterValidator(_once_each)
    ] = ["InstanceStress", "InstanceConnectivity"]


class ComputeConfig(Model):
    """The Region's SageMaker HyperPod cluster on EKS and its Kubernetes storage."""

    enabled: bool = True
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d{2}$")] = "1.33"
    # Must not overlap any VPC CIDR of the environment (network_rules.py): pods would lose the route to it.
    service_cidr: Cidr = "172.20.0.0/16"
    # EKS API endpoint is private; public access only from these CIDRs (none by default).
    public_access_cidrs: list[Cidr] = []
    instance_groups: Annotated[list[InstanceGroupConfig], Field(min_length=1)] = [InstanceGroupConfig()]
    training_plan_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:sagemaker:")] | None = None
    dataset_volume_size: Quantity = "50Ti"
    checkpoint_volume_size: Quantity = "2Ti"
    # The training image users build from workload/Dockerfile. Default: the digest `hubspoke image build`
    # recorded for this Region's own ECR repository (images pulled across Regions pay transfer on every node
    # start).
    training_image: ImageRef | None = None


class QuotasConfig(Model):
    """AWS quotas of the Region's account that the topology relies on, when they were raised above the default."""

    # Amazon VPC "Inbound or outbound rules per security group" (L-0EA8095F): 60 by default, adjustable; this quota
    # times "Security groups per network interface" may not exceed 1,000 (Amazon VPC User Guide, "Amazon VPC
    # quotas", Security groups). CNQ node interfaces carry two groups (their own and the cross-Region one), so
    # at most 500. Validation counts the cross-Region rules the topology needs against it; preflight reads the
    # applied value.
    security_group_rules: Annotated[int, Field(ge=60, le=500)] = 60
    # Amazon VPC "IPv4 CIDR blocks per VPC" (L-83CA0A9D): 5 by default, adjustable up to 50 (Amazon VPC User
    # Guide, "Amazon VPC quotas", VPC and subnets). The primary block counts. Validation refuses more blocks on a
    # VPC than this states.
    vpc_cidr_blocks: Annotated[int, Field(ge=5, le=50)] = 5
    # Amazon VPC "Routes per route table" (L-93826ACB): 50 by default, adjustable up to 1,000 (Amazon VPC User
    # Guide, "Amazon VPC quotas", Route tables). Each private route table holds a route per peer CIDR over the
    # peering (on the hub: every spoke's blocks). Validation refuses more routes than this states.
    routes_per_route_table: Annotated[int, Field(ge=50, le=1000)] = 50


class RegionConfig(Model):
    """One Region of the environment: its VPC and what runs in it."""

    region: RegionCode
    cidr: VpcCidr
    account: AccountId | None = None
    secondary_cidrs: list[SecondaryCidr] = []
    # AZ IDs for the private subnets; default: the Region's first two (regions.py).
    az_ids: Annotated[list[AzId], Field(min_length=1, max_length=4)] | None = None
    # The AZ ID where accelerator capacity (and the local CNQ) lives; default: the first of az_ids.
    accelerator_az_id: AzId | None = None
    nat: Literal["single", "per_az", "none"] = "single"
    # CloudWatch Logs retention values of a year or more: Control Tower's CT.CLOUDWATCH.PR.2, which every synth
    # runs (cdklabs-cdk-validator-cfnguard 0.0.62, rules/control-tower/cfn-guard/cloudwatch/
    # ct-cloudwatch-pr-2.guard), refuses a log group kept for less than 365 days.
    flow_logs_retention_days: Literal[365, 731, 1827, 3653] = 365
    storage: StorageConfig = StorageConfig()
    compute: ComputeConfig = ComputeConfig()
    quotas: QuotasConfig = QuotasConfig()

    @property
    def resolved_az_ids(self) -> tuple[str, ...]:
        return tuple(self.az_ids) if self.az_ids else REGIONS[self.region].default_az_ids[:2]

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

    portal: PortalConfig = PortalConfig()


# What the reference job reads (docs/design.md §1: 4096-token windows, 115-116 samples/s on a warm spoke): each
# sample is seq_len + 1 tokens of 2 bytes (workload/shards.py, TokenShards.__getitem__), 8,194 bytes, so
# 115 samples/s read about 0.94 MB/s, 283 MB per 5-minute period.
REFERENCE_READ_BYTES_PER_SECOND = (4096 + 1) * 2 * 115


DatasetSegment = Annotated[str, Field(pattern=SEGMENT_PATTERN)]
# S3 bucket names (Amazon S3 User Guide, "General purpose bucket naming rules": 3 to 63 characters, lowercase
# letters, digits, dots and hyphens, beginning and ending with a letter or digit).
BucketName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
# A KMS key ARN (AWS KMS Developer Guide, "Key identifiers (KeyId)": arn:<partition>:kms:<region>:<account>:
# key/<key id>, a multi-Region key's id starting mrk-); an alias ARN is refused: an IAM grant names keys.
KmsKeyArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws(-cn|-us-gov)?:kms:[a-z0-9-]+:[0-9]{12}:key/([0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$"
    ),
]
# The reference run, LLaMA 3 on tokenized C4, reads token IDs of Meta's Llama 3 tokenizer: 128,256 of them
# (vocab_size in Meta's Llama 3 params.json; meta-llama/llama3@0053e6b llama/tokenizer.py adds 256 reserved
# special tokens after the 128K BPE ranks, Meta's "Introducing Meta Llama 3": "a tokenizer with a vocabulary
# of 128K tokens"). IDs above 65,535 need 4-byte tokens (workload/shards.py).
REFERENCE_VOCAB_SIZE = 128256
REFERENCE_TOKEN_BYTES: Literal[2, 4] = 4


class DatasetConfig(Model):
    """The dataset version training jobs pin, the token format they expect of it, and the buckets loads read."""

    # The version jobs read: <dataset_path>/<name>/<version> on the hub, sealed by its MANIFEST.json
    # (docs/datasets.md). Required to render a training job; no default on purpose (a run pins a version).
    name: DatasetSegment | None = None
    version: DatasetSegment | None = None
    # What the job expects; train.py refuses a version whose manifest says otherwise.
    token_bytes: Literal[2, 4] = REFERENCE_TOKEN_BYTES
    vocab_size: Annotated[int, Field(ge=1)] = REFERENCE_VOCAB_SIZE
    # The only buckets `hubspoke dataset load` copies from (Qumulo Shift-From); the hub's Shift user may read
    # these and nothing else.
    source_buckets: list[BucketName] = []
    # The KMS keys of source buckets encrypted with SSE-KMS: the Shift user may kms:Decrypt with exactly these
    # (S3 User Guide, "Using server-side encryption with AWS KMS keys"). Empty: SSE-S3 or unencrypted buckets
    # only. ASSUMED: Shift-From reads SSE-KMS objects given the grant (Qumulo's guide says nothing of it).
    source_kms_key_arns: list[KmsKeyArn] = []

    @model_validator(mode="after")
    def _vocab_fits(self) -> DatasetConfig:
        limit = 2 ** (8 * self.token_bytes)
        if self.vocab_size > limit:
            raise ValueError(
                f"vocab_size {self.vocab_size} does not fit {self.token_bytes}-byte tokens (at most {limit}); "
                "set token_bytes: 4"
            )
        if len(set(self.source_buckets)) != len(self.source_buckets):
            raise ValueError("source_buckets names a bucket twice; list each once")
        if self.source_kms_key_arns and not self.source_buckets:
            raise ValueError(
                "source_kms_key_arns without source_buckets grants nothing a load uses; list the buckets too"
            )
        return self


class OpsConfig(Model):
    """Who is told when the hub goes away, and the floors the alarms hold."""

    # Who the alarms reach: addresses (SNS email subscriptions, each confirmed by its owner) and existing SNS
    # topics (an on-call or chat integration). config/ops_rules.py refuses alarms that reach nobody unless
    # alarms_notify_nobody says so in the file.
    alarm_emails: list[Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]] = []
    # arn:PARTITION:sns:REGION:ACCOUNT:NAME (SNS Developer Guide, "Amazon SNS resource ARNs"); a topic receives the
    # alarms of its own Region only, and its owner's topic policy must let CloudWatch publish (docs/operations.md).
    alarm_topic_arns: list[
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")]
    ] = []
    # The explicit opt-out: the alarms exist (dashboard, alarm history) but notify nobody.
    alarms_notify_nobody: bool = False
    # A choice, not a source: a job below this fraction of its own best 5-minute samples/s (8 of 10 minutes)
    # is starving. The reference run varied by under 2 % once warm (115-117 samples/s).
    throughput_floor_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.8
    gpu_utilization_floor_percent: Annotated[int, Field(ge=1, le=100)] = 80
    cache_hit_ratio_floor: Annotated[float, Field(gt=0, le=1)] = 0.9
    # NFS reads (decimal GB per 5-minute period) below which a spoke's hit ratio is not computed: the portal's
    # background traffic divided by a trickle of reads is meaningless. The default is a tenth of what the
    # reference job reads per period (0.028 GB): a job slowed tenfold by misses still has a ratio, which the
    # paging alarm needs (it pages on a low ratio while the job is slow). It assumes that background stays
    # well under (1 - floor) x this per period, which no Qumulo source states (docs/operations.md, "Derived
    # cache hit ratio"); a low ratio alone notifies nobody.
    cache_hit_ratio_min_read_gb: Annotated[float, Field(gt=0)] = round(
        REFERENCE_READ_BYTES_PER_SECOND * 300 / 10 / 1e9, 3
    )
    # Reserve one concurrent execution for each spoke's canary so a busy account cannot throttle it. Off by
    # default: Lambda keeps at least 100 executions unreserved (Lambda Developer Guide, "Configuring reserved
    # concurrency"), so an account with a low concurrency limit (new accounts often have 10) refuses any
    # reservation and the Ops stack rolls back; `hubspoke preflight` checks the account when this is on.
    reserve_canary_concurrency: bool = False


# --- Cluster access (issue 23): who administers the private EKS clusters and how they reach the endpoint ---
# An EKS access entry names one IAM principal: a role (its ARN may include a path) or a user; STS session ARNs
# cannot be used (EKS User Guide, "Create access entries"; EKS API reference, CreateAccessEntry.principalArn).
_PRINCIPAL_ARN = re.compile(
    r"arn:aws(?:-[a-z]+)*:iam::\d{12}:(?:role|user)/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,128}"
)
_SESSION_ARN = re.compile(r"arn:(aws(?:-[a-z]+)*):sts::(\d{12}):assumed-role/([\w+=,.@-]+)/.*")


def _principal_arn(value: str) -> str:
    if _PRINCIPAL_ARN.fullmatch(value):
        return value
    session = _SESSION_ARN.fullmatch(value)
    if session:
        partition, account, role = session.groups()
        raise ValueError(
            f"'{value}' is an STS session, which EKS access entries refuse: give the role's ARN, "
            f"arn:{partition}:iam::{account}:role/<path/>{role} (`aws iam get-role --role-name {role} "
            "--query Role.Arn` prints it with its path)"
        )
    raise ValueError(
        f"'{value}' is not an IAM role or user ARN; write it like arn:aws:iam::123456789012:role/ClusterAdmins "
        "(a role may have a path: arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins)"
    )


PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
# The CDK bootstrap's CloudFormation execution role (cdk-<qualifier>-cfn-exec-role-<account>-<region>, CDK
# bootstrap template) creates the clusters, and EKS gives the creator its own access entry
# (CreateCluster accessConfig.bootstrapClusterCreatorAdminPermissions, true unless set: EKS API reference); a
# second entry for the same principal is refused ("Create access entries"), which would roll the stack back.
_CDK_EXEC_ROLE = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/cdk-[a-z0-9]+-cfn-exec-role-\d{12}-[a-z0-9-]+")
# The access host's instance type and the CPU architecture of the Amazon Linux 2023 image it runs: the smallest
# burstable types of the Graviton and x86 families (EC2 User Guide, "Burstable performance instances").
ACCESS_HOST_ARCHITECTURES: dict[str, Literal["arm64", "x86_64"]] = {
    "t4g.nano": "arm64",
    "t4g.micro": "arm64",
    "t3.nano": "x86_64",
    "t3.micro": "x86_64",
    # For accounts that enforce Control Tower's CT.EC2.PR.19 (instance types encrypting traffic in transit).
    "c7g.medium": "arm64",
}


class AccessConfig(Model):
    """Who administers every compute cluster of the environment, and the access host they reach its endpoint by."""

    # IAM roles (preferred) or users given an EKS access entry with cluster admin on every compute cluster.
    administrators: list[PrincipalArn] = []
    # An SSM-managed host in a private subnet, for Session Manager port forwarding to the private EKS endpoint.
    # Default: deployed when administrators are listed (they need it to reach a private endpoint).
    access_host: bool | None = None
    access_host_instance_type: Literal["t4g.nano", "t4g.micro", "t3.nano", "t3.micro", "c7g.medium"] = (
        "t4g.nano"
    )

    @model_validator(mode="after")
    def _administrators_unique(self) -> AccessConfig:
        twice = sorted({a for a in self.administrators if self.administrators.count(a) > 1})
        if twice:
            # EKS: "An IAM principal can't be included in more than one access entry" (Create access entries).
            raise ValueError(f"administrators lists {', '.join(twice)} more than once: keep one of each")
        creators = [a for a in self.administrators if _CDK_EXEC_ROLE.fullmatch(a)]
        if creators:
            raise ValueError(
                f"administrators lists {', '.join(creators)}, the CDK deployment role that creates the clusters: "
                "EKS already gives the cluster creator an access entry and refuses a second one; remove it and "
                "list the roles people use"
            )
        return self

    @property
    def host_enabled(self) -> bool:
        return bool(self.administrators) if self.access_host is None else self.access_host


class HubSpokeConfig(Model):
    """One environment: a hub Region, its spoke Regions, and the settings they share."""

    environment: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,15}$")]
    account: AccountId
    hub: HubConfig
    spokes: list[SpokeConfig] = []
    # Inter-Region peering carries at most 8500 bytes (EC2 User Guide, "Network MTU").
    inter_region_mtu: Annotated[int, Field(ge=1280, le=8500)] = 8500
    tags: dict[str, str] = {}
    dataset: DatasetConfig = DatasetConfig()
    ops: OpsConfig = OpsConfig()
    access: AccessConfig = AccessConfig()

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
